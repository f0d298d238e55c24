// SPDX-License-Identifier: GPL-2.0
/*
 * gen: generation-tagged type-stable slots, as Go's netpoller tags its
 * pollDesc and HAProxy its fdtab.
 *
 * One epoll instance for all workers, EPOLLONESHOT; data.u64 = slot index |
 * the slot's generation << 32. Slots are small and type-stable (allocated
 * in chunks, reused through a free list, never freed during the run), each
 * with a lock, a generation, a reference count, the descriptor and a
 * pointer to the state. A worker locks the slot, drops the event if the
 * generation differs (the connection was retired after the kernel handed
 * the event out), else takes a reference and unlocks; it serves the
 * request and re-arms, then drops the reference. The reaper, under the
 * lock, bumps the generation; if no reference is held it deletes, closes
 * and frees the state at once, else the last reference's holder does.
 *
 * Assumes the state and descriptor are used only under a reference taken
 * through the slot, and slot memory is never returned, only reused.
 */
#include <errno.h>
#include <stdlib.h>

#include "harness.h"

#define SLOT_CHUNK	64
#define MAX_CHUNKS	4096
#define NO_SLOT		UINT32_MAX

/* What an event names. Type-stable: never freed during the run. */
struct slot {
	struct lock lock;		/* everything but next_free */
	uint32_t gen;			/* bumped at retirement */
	int fd;
	uint32_t refs;			/* workers using conn and fd now */
	bool retire;			/* retired while in use: the last one frees */
	uint32_t next_free;		/* free list, under the slab's lock */
	struct conn *conn;		/* NULL while free */
};

struct gen_server {
	struct lock slab_lock;		/* nslots and the free list */
	_Atomic(struct slot *) chunks[MAX_CHUNKS];
	uint32_t nslots, free_slot;
};

struct gen_conn {
	uint32_t slot;
};

static struct gen_server *gs(struct server *s)
{
	return s->priv;
}

static int gen_setup(struct server *s)
{
	s->priv = calloc(1, sizeof(struct gen_server));
	if (!s->priv)
		return -ENOMEM;
	gs(s)->free_slot = NO_SLOT;
	return 0;
}

static void gen_teardown(struct server *s)
{
	int i;

	for (i = 0; i < MAX_CHUNKS; i++)
		free(atomic_load(&gs(s)->chunks[i]));
	free(s->priv);
}

/* Slot @i; its chunk was published before any event could name it. */
static struct slot *slot_at(struct server *s, uint32_t i)
{
	struct slot *chunk = atomic_load_explicit(&gs(s)->chunks[i / SLOT_CHUNK],
						  memory_order_acquire);

	return &chunk[i % SLOT_CHUNK];
}

static uint64_t gen_tag(uint32_t i, uint32_t gen)
{
	return (uint64_t)gen << 32 | i;
}

static uint32_t slot_get(struct server *s)
{
	struct gen_server *g = gs(s);
	struct slot *chunk;
	uint32_t i = NO_SLOT, j;

	lock_acquire(&g->slab_lock);
	if (g->free_slot != NO_SLOT) {
		i = g->free_slot;
		g->free_slot = slot_at(s, i)->next_free;
	} else if (g->nslots < MAX_CHUNKS * SLOT_CHUNK) {
		if (g->nslots % SLOT_CHUNK == 0) {
			chunk = calloc(SLOT_CHUNK, sizeof(*chunk));
			if (!chunk)
				goto out;
			for (j = 0; j < SLOT_CHUNK; j++) {
				chunk[j].gen = 1;
				chunk[j].fd = -1;
			}
			atomic_store_explicit(&g->chunks[g->nslots / SLOT_CHUNK], chunk,
					      memory_order_release);
			s->slot_bytes += SLOT_CHUNK * sizeof(*chunk);
			state_add(s, SLOT_CHUNK * sizeof(*chunk));
		}
		i = g->nslots++;
	}
out:
	lock_release(&g->slab_lock);
	return i;
}

static void slot_put(struct server *s, uint32_t i)
{
	struct gen_server *g = gs(s);

	lock_acquire(&g->slab_lock);
	slot_at(s, i)->next_free = g->free_slot;
	g->free_slot = i;
	lock_release(&g->slab_lock);
}

static int gen_add(struct server *s, struct conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	uint32_t i = slot_get(s);
	struct slot *sl;
	int ret;

	if (i == NO_SLOT)
		return -ENOMEM;
	sl = slot_at(s, i);
	lock_acquire(&sl->lock);
	sl->conn = c;
	sl->fd = c->fd;
	ev.data.u64 = gen_tag(i, sl->gen);
	lock_release(&sl->lock);
	conn_priv(c, struct gen_conn)->slot = i;
	ret = ctl(s->epfd, EPOLL_CTL_ADD, c->fd, &ev);
	if (ret) {
		lock_acquire(&sl->lock);
		sl->gen++;
		sl->conn = NULL;
		sl->fd = -1;
		lock_release(&sl->lock);
		slot_put(s, i);
	}
	return ret;
}

/* Delete, close, free; nobody else can reach @c through the slot now. */
static void gen_free(struct server *s, struct conn *c, int fd)
{
	if (ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL))
		count(s, C_CTL_ERRORS);
	conn_close_release(s, c);
}

/*
 * After the bump, an event already handed out names an old generation and
 * is dropped; a worker holding a reference frees it instead.
 */
static void gen_retire(struct server *s, struct conn *c)
{
	uint32_t i = conn_priv(c, struct gen_conn)->slot;
	struct slot *sl = slot_at(s, i);
	bool busy;
	int fd;

	lock_acquire(&sl->lock);
	sl->gen++;
	busy = sl->refs > 0;
	fd = sl->fd;
	if (busy) {
		sl->retire = true;
	} else {
		sl->conn = NULL;
		sl->fd = -1;
	}
	lock_release(&sl->lock);
	if (busy) {
		count(s, C_GEN_BUSY);
		return;
	}
	gen_free(s, c, fd);
	slot_put(s, i);
}

/* The slot names the state, if the generation still matches. */
static int gen_event(struct server *s, struct worker *w, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = tag };
	struct slot *sl = slot_at(s, (uint32_t)tag);
	struct conn *c;
	bool retire;
	int r, fd;

	(void)w;
	lock_acquire(&sl->lock);
	c = sl->conn;
	if (sl->gen != (uint32_t)(tag >> 32) || !c) {
		/* Retired after the kernel handed this event out. */
		lock_release(&sl->lock);
		count(s, C_STALE_EVENTS);
		return 0;
	}
	sl->refs++;	/* @c and its descriptor stay ours until the put */
	fd = sl->fd;
	lock_release(&sl->lock);
	r = serve_one(s, c);
	/*
	 * Re-armed even if retired meanwhile: the item is deleted only at
	 * the last put, and an event it gives now names an old generation.
	 */
	if (r >= 0 && ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev))
		count(s, C_CTL_ERRORS);
	lock_acquire(&sl->lock);
	retire = --sl->refs == 0 && sl->retire;
	if (retire) {
		sl->retire = false;
		sl->conn = NULL;
		sl->fd = -1;
	}
	lock_release(&sl->lock);
	if (retire) {
		gen_free(s, c, fd);
		slot_put(s, (uint32_t)tag);
	}
	return r > 0;
}

const struct variant variant_gen = {
	.name = "gen",
	.setup = gen_setup,
	.teardown = gen_teardown,
	.add = gen_add,
	.retire = gen_retire,
	.event = gen_event,
};
