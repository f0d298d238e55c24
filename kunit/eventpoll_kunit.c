// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * KUnit tests for the eventpoll ready list and for the wakeup sources that
 * EPOLLWAKEUP items hold while they have an event pending.
 *
 * Each case drives a real eventpoll instance through the functions that
 * epoll_ctl() and epoll_wait() use. The watched files are small pollable
 * files owned by the test: their ->poll() waits on a queue of the test and
 * reports a mask the test sets, so wake_up_poll() on that queue runs the
 * real ep_poll_callback(). Events are delivered into user memory mapped
 * with kunit_vm_mmap().
 *
 * After every step ep_test_check() verifies the invariant EPOLLWAKEUP
 * depends on: the wakeup source of an item is active exactly when the item
 * is queued (on the ready list, on the batch of a scan, or on the overflow
 * list during a scan); the wakeup source of the instance is inactive
 * outside a scan; the registered wakeup sources named after the watched
 * files are exactly those of the EPOLLWAKEUP items.
 */
#include <kunit/static_stub.h>
#include <kunit/test.h>
#include <linux/cred.h>
#include <linux/mman.h>
#include <linux/pm_wakeup.h>
#include <linux/prandom.h>
#include <linux/sched/signal.h>

#define EP_TEST_NR_SRC	4

/* For the assertions, which do not take restricted types */
#define ep_u32(mask)	((__force u32)(mask))

/* A pollable file whose readiness the test sets. */
struct ep_test_src {
	wait_queue_head_t wq;
	__poll_t mask;		/* what ->poll() reports */
	/* Wake the queue from inside the next ->poll(), as another CPU could */
	bool wake_in_poll;
	__poll_t key;		/* the events the last ->poll() was asked for */
	struct file *file;
	int fd;			/* the fd the item is keyed on (never installed) */
};

struct ep_test {
	struct kunit *test;
	struct eventpoll *ep;
	/* Name of the source files, hence of the wakeup sources of their items */
	char name[32];
	struct ep_test_src src[EP_TEST_NR_SRC];
	/* The batch of a scan the test opened with ep_start_scan(), or NULL */
	struct list_head *scan_batch;
	/* Sources whose items that scan delivered, one bit each */
	unsigned long delivered_in_scan;
	/* Room for EP_TEST_NR_SRC events in user memory */
	struct epoll_event __user *uevents;
	/* Calls to the failing ep_create_wakeup_source() */
	int nr_failed_allocs;
};

/* What a snapshot saw of the item of one source. */
struct ep_test_item {
	struct epitem *epi;	/* NULL if the source is not registered */
	__poll_t events;
	u64 data;
	bool linked;		/* epi->rdllink is on some list */
	bool on_rdllist;
	bool on_batch;
	bool on_ovflist;	/* found by walking ep->ovflist */
	bool ovflist_mark;	/* epi->ovflist_next says it is on the ovflist */
	struct wakeup_source *ws;
	bool ws_active;
	bool ws_listed;		/* ws is on the list of registered sources */
};

struct ep_test_state {
	struct ep_test_item item[EP_TEST_NR_SRC];
	int nr_items;		/* items in ep->rbr */
	int nr_stray;		/* unknown or repeated entries on the lists */
	int rd_order[EP_TEST_NR_SRC];	/* sources on ep->rdllist, head first */
	int nr_rd;
	bool scanning;
	bool has_ep_ws;
	bool ep_ws_active;
	bool ep_ws_listed;
	unsigned long ep_ws_activations;	/* ep->ws->active_count */
	int nr_named_ws;	/* registered wakeup sources named t->name */
};

static atomic_t ep_test_seq = ATOMIC_INIT(0);

static __poll_t ep_test_src_poll(struct file *file, poll_table *pt)
{
	struct ep_test_src *src = file->private_data;

	src->key = poll_requested_events(pt);
	poll_wait(file, &src->wq, pt);
	if (src->wake_in_poll) {
		src->wake_in_poll = false;
		wake_up_poll(&src->wq, READ_ONCE(src->mask));
	}
	return READ_ONCE(src->mask);
}

static const struct file_operations ep_test_src_fops = {
	.poll	= ep_test_src_poll,
	.llseek	= noop_llseek,
};

KUNIT_DEFINE_ACTION_WRAPPER(ep_test_fput, __fput_sync, struct file *);

/* The same steps as epoll_create1(), without installing an fd. */
static int ep_test_instance(struct kunit *test, struct eventpoll **epp)
{
	struct eventpoll *ep;
	struct file *file;
	int error;

	error = ep_alloc(&ep);
	if (error)
		return error;
	file = anon_inode_getfile("[eventpoll]", &eventpoll_fops, ep, O_RDWR);
	if (IS_ERR(file)) {
		ep_clear_and_put(ep);
		return PTR_ERR(file);
	}
	ep->file = file;
	*epp = ep;
	/*
	 * Cleanup runs in another kthread, where fput() would be deferred:
	 * release synchronously so that nothing outlives the case.
	 */
	return kunit_add_action_or_reset(test, ep_test_fput, file);
}

static int ep_test_init(struct kunit *test)
{
	unsigned long addr;
	struct ep_test *t;
	struct file *file;
	int error, i;

	if (!IS_ENABLED(CONFIG_MMU)) {
		kunit_skip(test, "events are delivered to user memory, which needs an MMU");
		return 0;
	}

	t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->test = test;
	snprintf(t->name, sizeof(t->name), "eventpoll_kunit_%d",
		 atomic_inc_return(&ep_test_seq));

	error = ep_test_instance(test, &t->ep);
	if (error)
		return error;

	for (i = 0; i < EP_TEST_NR_SRC; i++) {
		struct ep_test_src *src = &t->src[i];

		init_waitqueue_head(&src->wq);
		src->fd = i;
		file = anon_inode_getfile(t->name, &ep_test_src_fops, src,
					  O_RDWR);
		if (IS_ERR(file))
			return PTR_ERR(file);
		src->file = file;
		error = kunit_add_action_or_reset(test, ep_test_fput, file);
		if (error)
			return error;
	}

	addr = kunit_vm_mmap(test, NULL, 0, PAGE_SIZE, PROT_READ | PROT_WRITE,
			     MAP_ANONYMOUS | MAP_PRIVATE, 0);
	if (!addr || IS_ERR_VALUE(addr))
		return -ENOMEM;
	t->uevents = (struct epoll_event __user *)addr;

	test->priv = t;
	return 0;
}

/*
 * Without CONFIG_PM_SLEEP epoll_ctl() clears EPOLLWAKEUP: no item gets a
 * wakeup source, and the cases expect none.
 */
#define EP_TEST_WS	IS_ENABLED(CONFIG_PM_SLEEP)

/* @events as epoll_ctl() stores them on this kernel. */
static __poll_t ep_test_stored(__poll_t events)
{
	return EP_TEST_WS ? events : events & ~EPOLLWAKEUP;
}

/* Skip a case about wakeup sources where the kernel has none. */
static void ep_test_need_wakeup(struct kunit *test)
{
	if (!IS_ENABLED(CONFIG_PM_SLEEP))
		kunit_skip(test, "EPOLLWAKEUP needs CONFIG_PM_SLEEP");
}

/*
 * epoll_ctl() on any file: do_epoll_ctl() without its two fd lookups. The
 * real syscall would need fds, but a case and its cleanup run in two
 * kthreads that share the file table of all kernel threads; keeping plain
 * file references keeps their lifetime under the control of the test.
 * Not inlined: with KASAN, the event and what do_epoll_ctl_file() keeps on
 * the stack would otherwise count in the frame of every case, and some
 * cases are close to clang's 2048-byte frame limit.
 */
static noinline_for_stack int ep_test_ctl_file(struct file *epfile, int op,
					       struct file *file, int fd,
					       __poll_t events, u64 data,
					       bool nonblock)
{
	struct epoll_event epds = { .events = events, .data = data };
	struct epoll_filefd tf;

	ep_set_ffd(&tf, file, fd);
	return do_epoll_ctl_file(epfile, op, &tf, &epds, nonblock);
}

/* epoll_ctl() of the test's instance on source @i. */
static int ep_test_ctl(struct ep_test *t, int op, int i, __poll_t events,
		       u64 data)
{
	return ep_test_ctl_file(t->ep->file, op, t->src[i].file, t->src[i].fd,
				events, data, false);
}

/*
 * ep_test_ctl() without CAP_BLOCK_SUSPEND in the effective set;
 * *capable_seen tells whether capable() really said no.
 */
static int ep_test_ctl_nocap(struct ep_test *t, int op, int i,
			     __poll_t events, u64 data, bool *capable_seen)
{
	const struct cred *old;
	struct cred *new;
	int error;

	new = prepare_creds();
	if (!new)
		return -ENOMEM;
	cap_lower(new->cap_effective, CAP_BLOCK_SUSPEND);
	old = override_creds(new);
	*capable_seen = capable(CAP_BLOCK_SUSPEND);
	error = ep_test_ctl(t, op, i, events, data);
	revert_creds(old);
	put_cred(new);

	return error;
}

/* Change what source @i reports, without a wakeup. */
static void ep_test_set(struct ep_test *t, int i, __poll_t mask)
{
	WRITE_ONCE(t->src[i].mask, mask);
}

/* Change what source @i reports and wake its queue with @key. */
static void ep_test_fire(struct ep_test *t, int i, __poll_t mask, __poll_t key)
{
	ep_test_set(t, i, mask);
	wake_up_poll(&t->src[i].wq, key);
}

/*
 * epoll_wait() with a zero timeout into @uevents; the delivered events are
 * copied to @out.
 */
static int ep_test_wait_into(struct ep_test *t,
			     struct epoll_event __user *uevents,
			     int maxevents, struct epoll_event *out)
{
	struct epoll_event junk[EP_TEST_NR_SRC];
	struct timespec64 zero = {};
	int n;

	/* Poison the test's buffer: stale events must not pass for new ones. */
	memset(junk, 0xa5, sizeof(junk));
	if (copy_to_user(t->uevents, junk, sizeof(junk)))
		KUNIT_FAIL(t->test, "cannot write the user buffer");

	n = ep_poll(t->ep, uevents, maxevents, &zero);
	if (n > 0 && copy_from_user(out, uevents, n * sizeof(*out)))
		KUNIT_FAIL(t->test, "cannot read the user buffer");
	return n;
}

static int ep_test_wait(struct ep_test *t, int maxevents,
			struct epoll_event *out)
{
	return ep_test_wait_into(t, t->uevents, maxevents, out);
}

static struct ep_test_item *ep_test_item_of(struct ep_test_state *s,
					    struct epitem *epi)
{
	int i;

	for (i = 0; i < EP_TEST_NR_SRC; i++)
		if (s->item[i].epi == epi)
			return &s->item[i];
	return NULL;
}

/* Record what ep->rbr, the lists and the wakeup sources hold. */
static void ep_test_snapshot(struct ep_test *t, struct ep_test_state *s)
{
	struct eventpoll *ep = t->ep;
	struct ep_test_item *it;
	struct list_head *prev;
	struct epitem *epi;
	struct rb_node *rbp;
	int i, n;

	lockdep_assert_held(&ep->mtx);
	memset(s, 0, sizeof(*s));

	for (rbp = rb_first_cached(&ep->rbr); rbp; rbp = rb_next(rbp))
		s->nr_items++;
	for (i = 0; i < EP_TEST_NR_SRC; i++) {
		it = &s->item[i];
		it->epi = ep_find(ep, t->src[i].file, t->src[i].fd);
		if (!it->epi)
			continue;
		it->events = it->epi->event.events;
		it->data = it->epi->event.data;
		it->ws = ep_wakeup_source(it->epi);
	}

	spin_lock_irq(&ep->lock);
	s->scanning = ep_is_scanning(ep);
	s->has_ep_ws = !!ep->ws;
	s->ep_ws_active = ep->ws && ep->ws->active;
	s->ep_ws_activations = ep->ws ? ep->ws->active_count : 0;
	prev = &ep->rdllist;
	list_for_each_entry(epi, &ep->rdllist, rdllink) {
		it = ep_test_item_of(s, epi);
		/* An item added twice links back to itself. */
		if (!it || it->on_rdllist || epi->rdllink.prev != prev) {
			s->nr_stray++;
			break;
		}
		prev = &epi->rdllink;
		it->on_rdllist = true;
		if (s->nr_rd < EP_TEST_NR_SRC)
			s->rd_order[s->nr_rd++] = it - s->item;
	}
	if (t->scan_batch) {
		list_for_each_entry(epi, t->scan_batch, rdllink) {
			it = ep_test_item_of(s, epi);
			if (!it || it->on_batch) {
				s->nr_stray++;
				break;
			}
			it->on_batch = true;
		}
	}
	/* Bounded walk: a broken list must fail the check, not hang it. */
	n = 0;
	for (epi = s->scanning ? ep->ovflist : NULL; epi && n <= EP_TEST_NR_SRC;
	     epi = epi->ovflist_next, n++) {
		it = ep_test_item_of(s, epi);
		if (!it || it->on_ovflist) {
			s->nr_stray++;
			break;
		}
		it->on_ovflist = true;
	}
	for (i = 0; i < EP_TEST_NR_SRC; i++) {
		it = &s->item[i];
		if (!it->epi)
			continue;
		it->linked = ep_is_linked(it->epi);
		it->ovflist_mark = epi_on_ovflist(it->epi);
		it->ws_active = it->ws && it->ws->active;
	}
	spin_unlock_irq(&ep->lock);

#ifdef CONFIG_PM_SLEEP
	{
		struct wakeup_source *ws;
		int idx;

		idx = wakeup_sources_read_lock();
		for_each_wakeup_source(ws) {
			if (ws == ep->ws)
				s->ep_ws_listed = true;
			if (ws->name && !strcmp(ws->name, t->name))
				s->nr_named_ws++;
			for (i = 0; i < EP_TEST_NR_SRC; i++)
				if (s->item[i].ws == ws)
					s->item[i].ws_listed = true;
		}
		wakeup_sources_read_unlock(idx);
	}
#endif
}

static bool ep_test_queued(const struct ep_test_item *it)
{
	return it->on_rdllist || it->on_batch || it->on_ovflist;
}

/* The invariant, on a snapshot; @step names the step in failure messages. */
static void ep_test_check_state(struct ep_test *t,
				const struct ep_test_state *s,
				const char *step)
{
	struct kunit *test = t->test;
	int i, nr_registered = 0, nr_ws = 0;

	KUNIT_EXPECT_EQ_MSG(test, s->nr_stray, 0,
			    "%s: unknown or repeated item on a ready list",
			    step);
	for (i = 0; i < EP_TEST_NR_SRC; i++) {
		const struct ep_test_item *it = &s->item[i];
		bool queued = ep_test_queued(it);

		if (!it->epi)
			continue;
		nr_registered++;
		/* Only EPOLL_CTL_MOD queues a disarmed oneshot item again. */
		if (!s->scanning && !(it->events & ~EP_PRIVATE_BITS))
			KUNIT_EXPECT_FALSE_MSG(test, queued,
					       "%s: item %d disarmed but queued",
					       step, i);
		KUNIT_EXPECT_EQ_MSG(test, it->linked,
				    it->on_rdllist || it->on_batch,
				    "%s: item %d linked to an unknown list",
				    step, i);
		KUNIT_EXPECT_EQ_MSG(test, it->ovflist_mark, it->on_ovflist,
				    "%s: item %d ovflist mark is stale", step, i);
		KUNIT_EXPECT_EQ_MSG(test, !!it->ws,
				    !!(it->events & EPOLLWAKEUP),
				    "%s: item %d events %#x, wakeup source %s",
				    step, i, ep_u32(it->events),
				    it->ws ? "present" : "absent");
		if (!it->ws)
			continue;
		nr_ws++;
		KUNIT_EXPECT_TRUE_MSG(test, it->ws_listed,
				      "%s: item %d wakeup source not registered",
				      step, i);
		/*
		 * Delivery releases the source; if a wakeup of the same scan
		 * put the item on the overflow list, ep_done_scan() decides.
		 */
		if (s->scanning && (t->delivered_in_scan & BIT(i)))
			continue;
		KUNIT_EXPECT_EQ_MSG(test, it->ws_active, queued,
				    "%s: item %d wakeup source %s but item %s",
				    step, i,
				    it->ws_active ? "active" : "inactive",
				    queued ? "queued" : "not queued");
	}
	KUNIT_EXPECT_EQ_MSG(test, s->nr_items, nr_registered,
			    "%s: unknown items in the tree", step);
	KUNIT_EXPECT_EQ_MSG(test, s->nr_named_ws, nr_ws,
			    "%s: registered wakeup sources named %s", step,
			    t->name);
	if (nr_ws)
		KUNIT_EXPECT_TRUE_MSG(test, s->has_ep_ws,
				      "%s: EPOLLWAKEUP items but no ep->ws",
				      step);
	if (s->has_ep_ws)
		KUNIT_EXPECT_TRUE_MSG(test, s->ep_ws_listed,
				      "%s: ep->ws not registered", step);
	if (!s->scanning)
		KUNIT_EXPECT_FALSE_MSG(test, s->ep_ws_active,
				       "%s: ep->ws active outside a scan", step);
}

/* Check the invariant with ep->mtx held (during a scan opened by the test). */
static void __ep_test_check(struct ep_test *t, struct ep_test_state *s,
			    const char *step)
{
	ep_test_snapshot(t, s);
	ep_test_check_state(t, s, step);
}

/* Check the invariant; @s is left for the checks of the case. */
static void ep_test_check(struct ep_test *t, struct ep_test_state *s,
			  const char *step)
{
	mutex_lock(&t->ep->mtx);
	ep_test_snapshot(t, s);
	mutex_unlock(&t->ep->mtx);
	ep_test_check_state(t, s, step);
}

/*
 * A snapshot, or room for events, off the stack. With KASAN_STACK every
 * local whose address is taken, each KUNIT_EXPECT_*() included, gets a
 * slot of its own between redzones: a case with two snapshots and a few
 * dozen expectations on its stack outgrows the 2048-byte FRAME_WARN of
 * clang builds.
 */
static struct ep_test_state *ep_test_state_alloc(struct kunit *test)
{
	struct ep_test_state *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, s);
	return s;
}

static struct epoll_event *ep_test_events_alloc(struct kunit *test)
{
	struct epoll_event *ev = kunit_kcalloc(test, EP_TEST_NR_SRC,
					       sizeof(*ev), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, ev);
	return ev;
}

/* ADD: an item is queued iff it is ready, and holds a wakeup source iff asked */

struct ep_insert_case {
	const char *name;
	__poll_t ready;
	__poll_t events;
	/* The source wakes from inside the poll of the ADD, on another CPU. */
	bool wake_in_poll;
};

static const struct ep_insert_case ep_insert_cases[] = {
	{ "ready_wakeup", EPOLLIN, EPOLLIN | EPOLLWAKEUP },
	{ "unready_wakeup", EPOLLOUT, EPOLLIN | EPOLLWAKEUP },
	{ "ready", EPOLLIN, EPOLLIN },
	{ "unready", 0, EPOLLIN },
	/* EPOLLHUP is always reported, even if not asked for */
	{ "hup_wakeup", EPOLLHUP, EPOLLOUT | EPOLLWAKEUP },
	/* The wakeup queues the item first: ADD must not queue it again. */
	{ "ready_woken_during_poll", EPOLLIN, EPOLLIN | EPOLLWAKEUP, true },
};

KUNIT_ARRAY_PARAM_DESC(ep_insert, ep_insert_cases, name);

static void eventpoll_insert_ready(struct kunit *test)
{
	const struct ep_insert_case *c = test->param_value;
	struct ep_test *t = test->priv;
	struct ep_test_state s;
	bool ready = !!(c->ready & (c->events | EPOLLERR | EPOLLHUP));

	ep_test_set(t, 0, c->ready);
	t->src[0].wake_in_poll = c->wake_in_poll;
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->events, 7), 0);
	ep_test_check(t, &s, "add");
	KUNIT_EXPECT_PTR_NE(test, s.item[0].epi, NULL);
	KUNIT_EXPECT_EQ(test, ep_u32(s.item[0].events),
			ep_u32(ep_test_stored(c->events | EPOLLERR | EPOLLHUP)));
	KUNIT_EXPECT_EQ(test, s.item[0].data, 7);
	KUNIT_EXPECT_EQ(test, s.item[0].on_rdllist, ready);
	KUNIT_EXPECT_EQ(test, !!s.item[0].ws,
			!!(ep_test_stored(c->events) & EPOLLWAKEUP));
	KUNIT_EXPECT_EQ(test, s.item[0].ws_active,
			ready && !!(ep_test_stored(c->events) & EPOLLWAKEUP));
}

/* The poll callback queues an item (and activates its source) when it should */

struct ep_callback_case {
	const char *name;
	__poll_t events;
	__poll_t mask;		/* what the source reports after the wakeup */
	__poll_t key;		/* what the wakeup says */
	bool queued;
};

static const struct ep_callback_case ep_callback_cases[] = {
	{ "match", EPOLLIN, EPOLLIN, EPOLLIN, true },
	/* a wakeup without a key may be for anything */
	{ "no_key", EPOLLIN, EPOLLIN, 0, true },
	{ "no_key_not_ready", EPOLLIN, 0, 0, true },
	{ "other_event", EPOLLIN, EPOLLOUT, EPOLLOUT, false },
	{ "hup", EPOLLIN, EPOLLHUP, EPOLLHUP, true },
	{ "edge", EPOLLIN | EPOLLET, EPOLLIN, EPOLLIN, true },
	{ "oneshot", EPOLLIN | EPOLLONESHOT, EPOLLIN, EPOLLIN, true },
};

KUNIT_ARRAY_PARAM_DESC(ep_callback, ep_callback_cases, name);

static void eventpoll_callback_queue(struct kunit *test)
{
	const struct ep_callback_case *c = test->param_value;
	struct ep_test *t = test->priv;
	struct ep_test_state s;

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  c->events | EPOLLWAKEUP, 1), 0);
	ep_test_check(t, &s, "add");
	KUNIT_EXPECT_FALSE(test, ep_test_queued(&s.item[0]));

	ep_test_fire(t, 0, c->mask, c->key);
	ep_test_check(t, &s, "wakeup");
	KUNIT_EXPECT_EQ(test, s.item[0].on_rdllist, c->queued);
	KUNIT_EXPECT_EQ(test, s.item[0].ws_active, c->queued && EP_TEST_WS);

	/* A second wakeup does not queue the item twice. */
	ep_test_fire(t, 0, c->mask, c->key);
	ep_test_check(t, &s, "second wakeup");
	KUNIT_EXPECT_EQ(test, s.nr_rd, c->queued ? 1 : 0);
}

/*
 * Waking the waiters: a task in epoll_wait() sleeps on ep->wq, a poll(2) of
 * the epoll file or an outer epoll instance on ep->poll_wait. The test puts
 * a waiter of its own on those queues that counts its wakeups.
 */
struct ep_test_waiter {
	wait_queue_entry_t wait;
	wait_queue_head_t *wq;
	int nr_wakeups;
};

static int ep_test_waiter_wake(wait_queue_entry_t *wait, unsigned int mode,
			       int sync, void *key)
{
	struct ep_test_waiter *w = container_of(wait, struct ep_test_waiter,
						wait);

	w->nr_wakeups++;
	return 1;
}

static void ep_test_waiter_remove(void *data)
{
	struct ep_test_waiter *w = data;

	remove_wait_queue(w->wq, &w->wait);
}

/*
 * Queue an exclusive waiter on @wq, after those already there, as
 * epoll_wait() and EPOLLEXCLUSIVE items queue theirs.
 */
static struct ep_test_waiter *ep_test_waiter_add(struct kunit *test,
						 wait_queue_head_t *wq)
{
	struct ep_test_waiter *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, w);
	init_waitqueue_func_entry(&w->wait, ep_test_waiter_wake);
	w->wq = wq;
	add_wait_queue_exclusive(wq, &w->wait);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							ep_test_waiter_remove,
							w), 0);
	return w;
}

/*
 * EPOLLEXCLUSIVE: a wakeup of the source that reaches a task waiting on
 * the instance counts as the one exclusive wakeup, and the next exclusive
 * waiter of the source is not woken; one that wakes nobody, or is not for
 * the event the item waits for, lets the source wake the next waiter.
 */
struct ep_exclusive_case {
	const char *name;
	__poll_t events;
	__poll_t key;
	bool ep_waiter;		/* a task waits in epoll_wait() */
	bool sync;		/* the source wakes synchronously, as sockets do */
	bool next_woken;	/* the next waiter of the source is woken */
};

static const struct ep_exclusive_case ep_exclusive_cases[] = {
	{ "in", EPOLLIN | EPOLLEXCLUSIVE, EPOLLIN, true, false, false },
	{ "in_sync", EPOLLIN | EPOLLEXCLUSIVE, EPOLLIN, true, true, false },
	{ "out", EPOLLOUT | EPOLLEXCLUSIVE, EPOLLOUT, true, false, false },
	{ "in_out_item_out_key", EPOLLIN | EPOLLOUT | EPOLLEXCLUSIVE, EPOLLOUT,
	  true, false, false },
	{ "no_key", EPOLLIN | EPOLLEXCLUSIVE, 0, true, false, false },
	{ "hup", EPOLLIN | EPOLLEXCLUSIVE, EPOLLHUP, true, false, false },
	{ "no_epoll_waiter", EPOLLIN | EPOLLEXCLUSIVE, EPOLLIN, false, false,
	  true },
	{ "in_item_out_key", EPOLLIN | EPOLLEXCLUSIVE, EPOLLOUT | EPOLLHUP,
	  true, false, true },
	{ "out_item_in_key", EPOLLOUT | EPOLLEXCLUSIVE, EPOLLIN | EPOLLHUP,
	  true, false, true },
	{ "in_out_key", EPOLLIN | EPOLLEXCLUSIVE, EPOLLIN | EPOLLOUT, true,
	  false, true },
	{ "not_exclusive", EPOLLIN, EPOLLIN, true, false, true },
	{ "not_exclusive_sync", EPOLLIN, EPOLLIN, true, true, true },
};

KUNIT_ARRAY_PARAM_DESC(ep_exclusive, ep_exclusive_cases, name);

static void eventpoll_exclusive_wakeup(struct kunit *test)
{
	const struct ep_exclusive_case *c = test->param_value;
	struct ep_test *t = test->priv;
	struct ep_test_waiter *ep_waiter = NULL, *next;
	struct ep_test_state s;

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->events, 1), 0);
	next = ep_test_waiter_add(test, &t->src[0].wq);
	if (c->ep_waiter)
		ep_waiter = ep_test_waiter_add(test, &t->ep->wq);

	ep_test_set(t, 0, c->key ? c->key : EPOLLIN);
	if (c->sync)
		wake_up_interruptible_sync_poll(&t->src[0].wq, c->key);
	else
		wake_up_poll(&t->src[0].wq, c->key);

	ep_test_check(t, &s, "wakeup");
	KUNIT_EXPECT_TRUE(test, s.item[0].on_rdllist);
	if (ep_waiter)
		KUNIT_EXPECT_EQ(test, ep_waiter->nr_wakeups, 1);
	KUNIT_EXPECT_EQ(test, next->nr_wakeups, c->next_woken ? 1 : 0);
}

/*
 * POLLFREE: the queue of the source goes away. The item must unhook
 * itself, so that nothing touches the queue when the item is removed.
 */
static void eventpoll_pollfree(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct eppoll_entry *pwq;
	struct ep_test_state s;
	struct epitem *epi;

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  EPOLLIN | EPOLLWAKEUP, 1), 0);
	KUNIT_ASSERT_FALSE(test, list_empty(&t->src[0].wq.head));

	wake_up_pollfree(&t->src[0].wq);
	KUNIT_EXPECT_TRUE(test, list_empty(&t->src[0].wq.head));
	mutex_lock(&t->ep->mtx);
	epi = ep_find(t->ep, t->src[0].file, t->src[0].fd);
	pwq = epi ? epi->pwqlist : NULL;
	KUNIT_EXPECT_NOT_NULL(test, pwq);
	if (pwq)
		KUNIT_EXPECT_NULL(test, READ_ONCE(pwq->whead));
	mutex_unlock(&t->ep->mtx);
	/* The hangup itself is an event, held like any other. */
	ep_test_check(t, &s, "pollfree");
	KUNIT_EXPECT_TRUE(test, s.item[0].on_rdllist);

	KUNIT_EXPECT_EQ(test, ep_test_ctl(t, EPOLL_CTL_DEL, 0, 0, 0), 0);
	ep_test_check(t, &s, "del");
}

/*
 * A scan that leaves an event on the ready list wakes the next task in
 * epoll_wait(); one that leaves the list empty wakes nobody.
 */
static void eventpoll_scan_wakes_waiter(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct epoll_event ev[EP_TEST_NR_SRC];
	struct ep_test_waiter *waiter;
	struct eventpoll *ep = t->ep;
	struct ep_test_state s;
	LIST_HEAD(batch);

	ep_test_set(t, 0, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  EPOLLIN | EPOLLET | EPOLLWAKEUP, 1),
			0);
	waiter = ep_test_waiter_add(test, &ep->wq);

	/* A scan that delivers nothing puts the item back. */
	mutex_lock(&ep->mtx);
	ep_start_scan(ep, &batch);
	ep_done_scan(ep, &batch);
	__ep_test_check(t, &s, "empty scan");
	mutex_unlock(&ep->mtx);
	KUNIT_EXPECT_TRUE(test, s.item[0].on_rdllist);
	KUNIT_EXPECT_EQ(test, waiter->nr_wakeups, 1);

	/* Delivered, edge-triggered: nothing is left to wake anyone for. */
	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	ep_test_check(t, &s, "wait");
	KUNIT_EXPECT_EQ(test, s.nr_rd, 0);
	KUNIT_EXPECT_EQ(test, waiter->nr_wakeups, 1);
}

/*
 * ADD and MOD wake the pollers of the epoll file (poll(2), an outer epoll
 * instance) when they queue the item, and only then.
 */
static void eventpoll_ctl_wakes_pollers(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct ep_test_waiter *poller;
	struct ep_test_state s;

	poller = ep_test_waiter_add(test, &t->ep->poll_wait);

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, EPOLLIN, 1), 0);
	KUNIT_EXPECT_EQ(test, poller->nr_wakeups, 0);
	ep_test_set(t, 0, EPOLLOUT);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_MOD, 0, EPOLLIN, 2), 0);
	KUNIT_EXPECT_EQ(test, poller->nr_wakeups, 0);

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_MOD, 0, EPOLLOUT, 3), 0);
	KUNIT_EXPECT_EQ(test, poller->nr_wakeups, 1);
	ep_test_set(t, 1, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 1, EPOLLIN, 4), 0);
	KUNIT_EXPECT_EQ(test, poller->nr_wakeups, 2);
	ep_test_check(t, &s, "ctl");
	KUNIT_EXPECT_EQ(test, s.nr_rd, 2);
}

/* Delivery: level-triggered items stay queued, the others are released */

struct ep_deliver_case {
	const char *name;
	__poll_t mode;
	bool queued;		/* still queued after the delivery */
	bool requeued;		/* queued again by the next wakeup */
};

static const struct ep_deliver_case ep_deliver_cases[] = {
	{ "level", 0, true, true },
	{ "edge", EPOLLET, false, true },
	{ "oneshot", EPOLLONESHOT, false, false },
	{ "oneshot_edge", EPOLLONESHOT | EPOLLET, false, false },
};

KUNIT_ARRAY_PARAM_DESC(ep_deliver, ep_deliver_cases, name);

static void eventpoll_deliver_mode(struct kunit *test)
{
	const struct ep_deliver_case *c = test->param_value;
	__poll_t events = EPOLLIN | EPOLLWAKEUP | c->mode;
	struct ep_test *t = test->priv;
	struct epoll_event ev[EP_TEST_NR_SRC];
	unsigned long activations;
	struct ep_test_state s;

	ep_test_set(t, 0, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, events, 42), 0);
	ep_test_check(t, &s, "add");
	KUNIT_EXPECT_EQ(test, s.item[0].ws_active, EP_TEST_WS);
	activations = s.ep_ws_activations;

	KUNIT_ASSERT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ep_u32(ev[0].events), ep_u32(EPOLLIN));
	KUNIT_EXPECT_EQ(test, ev[0].data, 42);
	ep_test_check(t, &s, "first wait");
	/* ep->ws covered the handover from the item's source to the caller. */
	KUNIT_EXPECT_EQ(test, s.ep_ws_activations, activations + EP_TEST_WS);
	KUNIT_EXPECT_EQ(test, s.item[0].on_rdllist, c->queued);
	KUNIT_EXPECT_EQ(test, s.item[0].ws_active, c->queued && EP_TEST_WS);
	KUNIT_EXPECT_EQ(test, s.has_ep_ws, EP_TEST_WS);
	if (c->mode & EPOLLONESHOT)
		KUNIT_EXPECT_EQ(test, ep_u32(s.item[0].events & ~EP_PRIVATE_BITS),
				0);

	ep_test_fire(t, 0, EPOLLIN, EPOLLIN);
	ep_test_check(t, &s, "wakeup");
	KUNIT_EXPECT_EQ(test, s.item[0].on_rdllist, c->requeued);
	/* Not even a wakeup without a key queues a disarmed item. */
	ep_test_fire(t, 0, EPOLLIN, 0);
	ep_test_check(t, &s, "wakeup without a key");
	KUNIT_EXPECT_EQ(test, s.item[0].on_rdllist, c->requeued);

	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev),
			c->requeued ? 1 : 0);
	ep_test_check(t, &s, "second wait");
	KUNIT_EXPECT_EQ(test, s.item[0].on_rdllist, c->queued);

	if (!(c->mode & EPOLLONESHOT))
		return;

	/* MOD re-arms a oneshot item; it is ready, so it is queued again. */
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_MOD, 0, events, 43), 0);
	ep_test_check(t, &s, "rearm");
	KUNIT_EXPECT_TRUE(test, s.item[0].on_rdllist);
	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ev[0].data, 43);
	ep_test_check(t, &s, "wait after rearm");
}

/* An item queued by a wakeup but not ready is dropped, and released. */
static void eventpoll_deliver_not_ready(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct epoll_event ev[EP_TEST_NR_SRC];
	struct ep_test_state s;

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  EPOLLIN | EPOLLWAKEUP, 1), 0);
	ep_test_fire(t, 0, 0, 0);
	ep_test_check(t, &s, "wakeup");
	KUNIT_EXPECT_EQ(test, s.item[0].ws_active, EP_TEST_WS);

	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 0);
	ep_test_check(t, &s, "wait");
	KUNIT_EXPECT_FALSE(test, s.item[0].linked);
	KUNIT_EXPECT_FALSE(test, s.item[0].ws_active);
}

/* A fault on the user buffer keeps the event queued, and the system awake. */
static void eventpoll_deliver_fault(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct epoll_event ev[EP_TEST_NR_SRC];
	struct ep_test_state s;
	unsigned long ro;

	ro = kunit_vm_mmap(test, NULL, 0, PAGE_SIZE, PROT_READ,
			   MAP_ANONYMOUS | MAP_PRIVATE, 0);
	KUNIT_ASSERT_TRUE(test, ro && !IS_ERR_VALUE(ro));

	ep_test_set(t, 0, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  EPOLLIN | EPOLLET | EPOLLWAKEUP, 5),
			0);
	KUNIT_EXPECT_EQ(test,
			ep_test_wait_into(t, (struct epoll_event __user *)ro,
					  EP_TEST_NR_SRC, ev),
			-EFAULT);
	ep_test_check(t, &s, "faulting wait");
	KUNIT_EXPECT_TRUE(test, s.item[0].on_rdllist);
	KUNIT_EXPECT_EQ(test, s.item[0].ws_active, EP_TEST_WS);

	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ev[0].data, 5);
	ep_test_check(t, &s, "wait");
	KUNIT_EXPECT_FALSE(test, s.item[0].on_rdllist);
}

/*
 * A short buffer delivers from the head of the ready list; what it had no
 * room for stays at the head, ahead of the level-triggered items requeued.
 */
static void eventpoll_deliver_maxevents(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct epoll_event ev[EP_TEST_NR_SRC];
	struct ep_test_state s;
	int i;

	for (i = 0; i < 3; i++) {
		ep_test_set(t, i, EPOLLIN);
		KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, i,
						  EPOLLIN | EPOLLWAKEUP, i),
				0);
	}
	KUNIT_ASSERT_EQ(test, ep_test_wait(t, 2, ev), 2);
	KUNIT_EXPECT_EQ(test, ev[0].data, 0);
	KUNIT_EXPECT_EQ(test, ev[1].data, 1);
	ep_test_check(t, &s, "first wait");
	KUNIT_ASSERT_EQ(test, s.nr_rd, 3);
	KUNIT_EXPECT_EQ(test, s.rd_order[0], 2);
	KUNIT_EXPECT_EQ(test, s.rd_order[1], 0);
	KUNIT_EXPECT_EQ(test, s.rd_order[2], 1);

	KUNIT_ASSERT_EQ(test, ep_test_wait(t, 1, ev), 1);
	KUNIT_EXPECT_EQ(test, ev[0].data, 2);
	ep_test_check(t, &s, "second wait");
	KUNIT_EXPECT_EQ(test, s.nr_rd, 3);
}

/*
 * Wakeups that arrive while a scan holds the ready list go to the overflow
 * list, keep their wakeup source active, and are back on the ready list
 * when the scan ends. The scan is opened by the test itself, as
 * ep_send_events() does, so the interleaving is deterministic.
 */
static void eventpoll_scan_overflow(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct epoll_event ev[EP_TEST_NR_SRC];
	struct eventpoll *ep = t->ep;
	struct ep_test_state s;
	LIST_HEAD(batch);
	int i, n;

	ep_test_set(t, 0, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  EPOLLIN | EPOLLWAKEUP, 10), 0);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 1,
					  EPOLLIN | EPOLLWAKEUP, 11), 0);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 2,
					  EPOLLIN | EPOLLET | EPOLLWAKEUP, 12),
			0);
	ep_test_check(t, &s, "add");

	/* No assertion may abort the case while ep->mtx is held. */
	mutex_lock(&ep->mtx);
	ep_start_scan(ep, &batch);
	t->scan_batch = &batch;
	__ep_test_check(t, &s, "scan started");
	KUNIT_EXPECT_TRUE(test, s.scanning);
	KUNIT_EXPECT_TRUE(test, s.item[0].on_batch);
	KUNIT_EXPECT_EQ(test, s.nr_rd, 0);

	/* Not queued yet: goes to the overflow list only. */
	ep_test_fire(t, 1, EPOLLIN, EPOLLIN);
	/* Already in the batch: goes to the overflow list as well. */
	ep_test_fire(t, 0, EPOLLIN, EPOLLIN);
	ep_test_fire(t, 2, EPOLLIN, EPOLLIN);
	/* A second wakeup does not link an item twice. */
	ep_test_fire(t, 1, EPOLLIN, EPOLLIN);
	__ep_test_check(t, &s, "wakeups during the scan");
	KUNIT_EXPECT_TRUE(test, s.item[0].on_ovflist);
	KUNIT_EXPECT_TRUE(test, s.item[0].on_batch);
	for (i = 1; i <= 2; i++) {
		KUNIT_EXPECT_TRUE(test, s.item[i].on_ovflist);
		KUNIT_EXPECT_FALSE(test, s.item[i].linked);
		KUNIT_EXPECT_EQ(test, s.item[i].ws_active, EP_TEST_WS);
	}

	ep_done_scan(ep, &batch);
	t->scan_batch = NULL;
	__ep_test_check(t, &s, "scan done");
	mutex_unlock(&ep->mtx);
	KUNIT_EXPECT_FALSE(test, s.scanning);
	/* The batch first, then the others in the order they woke up */
	KUNIT_ASSERT_EQ(test, s.nr_rd, 3);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, s.rd_order[i], i);

	/* Nothing was lost: all events are delivered, in that order. */
	n = ep_test_wait(t, EP_TEST_NR_SRC, ev);
	KUNIT_ASSERT_EQ(test, n, 3);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, ev[i].data, 10 + i);
	ep_test_check(t, &s, "wait");
	KUNIT_EXPECT_FALSE(test, ep_test_queued(&s.item[2]));
}

/*
 * In the scan the test opened, what ep_send_events() does for the item of
 * source @i: deliver its event, if any, into @*uevents. ep->mtx is held.
 */
static int ep_test_deliver(struct ep_test *t, int i,
			   struct epoll_event __user **uevents)
{
	struct ep_test_src *src = &t->src[i];
	struct epitem *epi = ep_find(t->ep, src->file, src->fd);
	poll_table pt;

	init_poll_funcptr(&pt, NULL);
	t->delivered_in_scan |= BIT(i);
	return ep_deliver_event(t->ep, epi, &pt, uevents, t->scan_batch);
}

/* End the scan the test opened. ep->mtx is held. */
static void ep_test_done_scan(struct ep_test *t)
{
	ep_done_scan(t->ep, t->scan_batch);
	t->scan_batch = NULL;
	t->delivered_in_scan = 0;
}

/*
 * A oneshot item that wakes up during a scan goes to the overflow list,
 * since it is still armed; when the same scan then delivers its event, it
 * is disarmed. ep_done_scan() must neither queue it again nor leave its
 * wakeup source active: a disarmed item waits for EPOLL_CTL_MOD, and
 * EPOLL_CTL_DISABLE finds it so (EBUSY). The wakeup arrives before the
 * delivery, or from inside the delivery's poll of the item: after the
 * delivery released the wakeup source, before it disarms the item.
 */
struct ep_scan_deliver_case {
	const char *name;
	__poll_t events;
	bool wake_in_poll;	/* else: wake before the delivery */
};

static const struct ep_scan_deliver_case ep_scan_deliver_cases[] = {
	{ "wakeup_before_delivery", EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP,
	  false },
	{ "wakeup_during_poll", EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, true },
	{ "edge_wakeup_before_delivery",
	  EPOLLIN | EPOLLONESHOT | EPOLLET | EPOLLWAKEUP, false },
	{ "no_wakeup_source", EPOLLIN | EPOLLONESHOT, false },
};

KUNIT_ARRAY_PARAM_DESC(ep_scan_deliver, ep_scan_deliver_cases, name);

static void eventpoll_scan_deliver_oneshot(struct kunit *test)
{
	const struct ep_scan_deliver_case *c = test->param_value;
	struct ep_test *t = test->priv;
	struct epoll_event __user *uevents = t->uevents;
	struct epoll_event ev[EP_TEST_NR_SRC];
	struct eventpoll *ep = t->ep;
	struct ep_test_state s;
	LIST_HEAD(batch);
	int delivered;

	ep_test_set(t, 0, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->events, 9),
			0);
	ep_test_check(t, &s, "add");
	KUNIT_ASSERT_TRUE(test, s.item[0].on_rdllist);

	/* No assertion may abort the case while ep->mtx is held. */
	mutex_lock(&ep->mtx);
	ep_start_scan(ep, &batch);
	t->scan_batch = &batch;
	if (c->wake_in_poll) {
		t->src[0].wake_in_poll = true;
	} else {
		ep_test_fire(t, 0, EPOLLIN, EPOLLIN);
		__ep_test_check(t, &s, "wakeup during the scan");
		KUNIT_EXPECT_TRUE(test, s.item[0].on_ovflist);
		KUNIT_EXPECT_TRUE(test, s.item[0].on_batch);
	}

	delivered = ep_test_deliver(t, 0, &uevents);
	__ep_test_check(t, &s, "delivery");
	KUNIT_EXPECT_EQ(test, delivered, 1);
	KUNIT_EXPECT_FALSE(test, t->src[0].wake_in_poll);
	KUNIT_EXPECT_TRUE(test, s.item[0].on_ovflist);
	KUNIT_EXPECT_FALSE(test, s.item[0].linked);
	KUNIT_EXPECT_EQ(test, ep_u32(s.item[0].events),
			ep_u32(ep_test_stored(c->events) & EP_PRIVATE_BITS));

	ep_test_done_scan(t);
	__ep_test_check(t, &s, "scan done");
	mutex_unlock(&ep->mtx);
	KUNIT_EXPECT_FALSE(test, ep_test_queued(&s.item[0]));
	KUNIT_EXPECT_FALSE(test, s.item[0].ws_active);
	KUNIT_EXPECT_EQ(test, s.nr_rd, 0);
	KUNIT_ASSERT_EQ(test, copy_from_user(ev, t->uevents, sizeof(ev[0])), 0);
	KUNIT_EXPECT_EQ(test, ep_u32(ev[0].events), ep_u32(EPOLLIN));
	KUNIT_EXPECT_EQ(test, ev[0].data, 9);

	/* The event was reported: DISABLE says so, and changes nothing. */
	KUNIT_EXPECT_EQ(test, ep_test_ctl(t, EPOLL_CTL_DISABLE, 0, 0, 0),
			-EBUSY);
	ep_test_check(t, &s, "disable");
	KUNIT_EXPECT_FALSE(test, ep_test_queued(&s.item[0]));
	KUNIT_EXPECT_FALSE(test, s.item[0].ws_active);
	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 0);

	/* MOD re-arms it; still ready, it is queued and reported again. */
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_MOD, 0, c->events, 10),
			0);
	ep_test_check(t, &s, "rearm");
	KUNIT_EXPECT_TRUE(test, s.item[0].on_rdllist);
	KUNIT_EXPECT_EQ(test, s.item[0].ws_active,
			!!(ep_test_stored(c->events) & EPOLLWAKEUP));
	KUNIT_ASSERT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ev[0].data, 10);
	ep_test_check(t, &s, "wait after rearm");
}

/* MOD creates and destroys the wakeup source of an item */

struct ep_modify_case {
	const char *name;
	__poll_t add;		/* events of the ADD */
	__poll_t ready;		/* what the source reports */
	bool deliver;		/* epoll_wait() before the MOD */
	__poll_t mod;		/* events of the MOD */
	bool queued;		/* queued after the MOD */
};

static const struct ep_modify_case ep_modify_cases[] = {
	{ "set_unready", EPOLLIN, 0, false, EPOLLIN | EPOLLWAKEUP, false },
	{ "set_queued", EPOLLIN, EPOLLIN, false, EPOLLIN | EPOLLWAKEUP, true },
	/* an edge-triggered item delivered but still ready is queued again */
	{ "set_ready_idle", EPOLLIN | EPOLLET, EPOLLIN, true,
	  EPOLLIN | EPOLLET | EPOLLWAKEUP, true },
	{ "clear_unready", EPOLLIN | EPOLLWAKEUP, 0, false, EPOLLIN, false },
	{ "clear_queued", EPOLLIN | EPOLLWAKEUP, EPOLLIN, false, EPOLLIN,
	  true },
	{ "keep_queued", EPOLLIN | EPOLLWAKEUP, EPOLLIN, false,
	  EPOLLIN | EPOLLOUT | EPOLLWAKEUP, true },
	{ "keep_oneshot", EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, EPOLLIN, true,
	  EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, true },
};

KUNIT_ARRAY_PARAM_DESC(ep_modify, ep_modify_cases, name);

static void eventpoll_modify_wakeup(struct kunit *test)
{
	const struct ep_modify_case *c = test->param_value;
	struct ep_test *t = test->priv;
	struct epoll_event ev[EP_TEST_NR_SRC];
	struct wakeup_source *ws;
	struct ep_test_state s;

	ep_test_need_wakeup(test);
	ep_test_set(t, 0, c->ready);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->add, 1), 0);
	if (c->deliver)
		KUNIT_ASSERT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	ep_test_check(t, &s, "add");
	ws = s.item[0].ws;

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_MOD, 0, c->mod, 2), 0);
	ep_test_check(t, &s, "mod");
	KUNIT_EXPECT_EQ(test, ep_u32(s.item[0].events),
			ep_u32(c->mod | EPOLLERR | EPOLLHUP));
	KUNIT_EXPECT_EQ(test, s.item[0].data, 2);
	KUNIT_EXPECT_EQ(test, s.item[0].on_rdllist, c->queued);
	KUNIT_EXPECT_EQ(test, s.nr_named_ws, c->mod & EPOLLWAKEUP ? 1 : 0);
	if (c->add & c->mod & EPOLLWAKEUP)
		KUNIT_EXPECT_PTR_EQ(test, s.item[0].ws, ws);
}

/* DEL unregisters the wakeup source and unlinks the item */

struct ep_remove_case {
	const char *name;
	__poll_t events;
	__poll_t ready;
};

static const struct ep_remove_case ep_remove_cases[] = {
	{ "queued_wakeup", EPOLLIN | EPOLLWAKEUP, EPOLLIN },
	{ "idle_wakeup", EPOLLIN | EPOLLWAKEUP, 0 },
	{ "queued", EPOLLIN, EPOLLIN },
};

KUNIT_ARRAY_PARAM_DESC(ep_remove, ep_remove_cases, name);

static void eventpoll_remove_item(struct kunit *test)
{
	const struct ep_remove_case *c = test->param_value;
	struct ep_test *t = test->priv;
	struct ep_test_state s;

	ep_test_set(t, 0, c->ready);
	ep_test_set(t, 1, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->events, 1), 0);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 1,
					  EPOLLIN | EPOLLWAKEUP, 2), 0);
	ep_test_check(t, &s, "add");
	KUNIT_EXPECT_EQ(test, s.nr_rd, c->ready ? 2 : 1);

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_DEL, 0, 0, 0), 0);
	ep_test_check(t, &s, "del");
	KUNIT_EXPECT_PTR_EQ(test, s.item[0].epi, NULL);
	KUNIT_EXPECT_EQ(test, s.nr_rd, 1);
	KUNIT_EXPECT_EQ(test, s.nr_named_ws, EP_TEST_WS);
	KUNIT_EXPECT_EQ(test, ep_test_ctl(t, EPOLL_CTL_DEL, 0, 0, 0), -ENOENT);
}

/* EPOLLWAKEUP is silently dropped for callers without CAP_BLOCK_SUSPEND */

struct ep_cap_case {
	const char *name;
	int op;
	bool cap;
};

static const struct ep_cap_case ep_cap_cases[] = {
	{ "add_cap", EPOLL_CTL_ADD, true },
	{ "add_nocap", EPOLL_CTL_ADD, false },
	{ "mod_cap", EPOLL_CTL_MOD, true },
	{ "mod_nocap", EPOLL_CTL_MOD, false },
};

KUNIT_ARRAY_PARAM_DESC(ep_cap, ep_cap_cases, name);

static void eventpoll_wakeup_capability(struct kunit *test)
{
	const struct ep_cap_case *c = test->param_value;
	__poll_t events = EPOLLIN | EPOLLWAKEUP;
	struct ep_test *t = test->priv;
	/* Without CONFIG_PM_SLEEP, nobody keeps EPOLLWAKEUP. */
	bool kept = c->cap && EP_TEST_WS;
	struct ep_test_state s;
	bool capable_seen;
	int error;

	if (!capable(CAP_BLOCK_SUSPEND))
		kunit_skip(test, "the test runs without CAP_BLOCK_SUSPEND");

	/*
	 * The source is not ready: a MOD adding EPOLLWAKEUP to a queued item
	 * is not what this case is about.
	 */
	if (c->op == EPOLL_CTL_MOD) {
		/* With the capability, the item has a wakeup source to lose. */
		KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
						  c->cap ? EPOLLIN : events, 1),
				0);
		ep_test_check(t, &s, "add");
		KUNIT_EXPECT_EQ(test, !!s.item[0].ws, !c->cap && EP_TEST_WS);
	}

	if (c->cap) {
		error = ep_test_ctl(t, c->op, 0, events, 2);
	} else {
		error = ep_test_ctl_nocap(t, c->op, 0, events, 2,
					  &capable_seen);
		KUNIT_EXPECT_FALSE(test, capable_seen);
	}
	KUNIT_EXPECT_EQ(test, error, 0);
	ep_test_check(t, &s, c->name);
	KUNIT_EXPECT_EQ(test, s.item[0].data, 2);
	KUNIT_EXPECT_EQ(test, !!(s.item[0].events & EPOLLWAKEUP), kept);
	KUNIT_EXPECT_EQ(test, !!s.item[0].ws, kept);
	KUNIT_EXPECT_EQ(test, s.nr_named_ws, kept ? 1 : 0);
}

/* A wakeup source that cannot be allocated fails the operation, unchanged */

static int ep_test_create_wakeup_source_fail(struct epitem *epi)
{
	struct ep_test *t = kunit_get_current_test()->priv;

	t->nr_failed_allocs++;
	return -ENOMEM;
}

struct ep_alloc_case {
	const char *name;
	int op;
	__poll_t add;		/* for MOD, the events of the ADD before it */
	__poll_t events;	/* the events of the operation */
	int error;
	int allocs;		/* how many allocations are attempted */
};

static const struct ep_alloc_case ep_alloc_cases[] = {
	{ "add", EPOLL_CTL_ADD, 0, EPOLLIN | EPOLLWAKEUP, -ENOMEM, 1 },
	{ "mod_set", EPOLL_CTL_MOD, EPOLLIN, EPOLLIN | EPOLLOUT | EPOLLWAKEUP,
	  -ENOMEM, 1 },
	/* no allocation needed: these succeed */
	{ "mod_keep", EPOLL_CTL_MOD, EPOLLIN | EPOLLWAKEUP,
	  EPOLLIN | EPOLLOUT | EPOLLWAKEUP, 0, 0 },
	{ "mod_clear", EPOLL_CTL_MOD, EPOLLIN | EPOLLWAKEUP, EPOLLIN | EPOLLOUT,
	  0, 0 },
};

KUNIT_ARRAY_PARAM_DESC(ep_alloc, ep_alloc_cases, name);

static void eventpoll_wakeup_alloc_failure(struct kunit *test)
{
	const struct ep_alloc_case *c = test->param_value;
	struct ep_test *t = test->priv;
	struct ep_test_state before, s;
	const struct ep_test_item *it = &s.item[0];
	int error;

	ep_test_need_wakeup(test);
	ep_test_set(t, 0, EPOLLIN);
	if (c->op == EPOLL_CTL_MOD)
		KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->add, 1),
				0);
	ep_test_check(t, &before, "before");

	kunit_activate_static_stub(test, ep_create_wakeup_source,
				   ep_test_create_wakeup_source_fail);
	error = ep_test_ctl(t, c->op, 0, c->events, 2);
	kunit_deactivate_static_stub(test, ep_create_wakeup_source);
	KUNIT_EXPECT_EQ(test, error, c->error);
	KUNIT_EXPECT_EQ(test, t->nr_failed_allocs, c->allocs);

	ep_test_check(t, &s, c->name);
	if (c->error) {
		/* Nothing changed. */
		KUNIT_EXPECT_PTR_EQ(test, it->epi, before.item[0].epi);
		KUNIT_EXPECT_EQ(test, ep_u32(it->events),
				ep_u32(before.item[0].events));
		KUNIT_EXPECT_EQ(test, it->data, before.item[0].data);
		KUNIT_EXPECT_PTR_EQ(test, it->ws, before.item[0].ws);
		KUNIT_EXPECT_EQ(test, it->on_rdllist, before.item[0].on_rdllist);
		KUNIT_EXPECT_EQ(test, s.nr_named_ws, before.nr_named_ws);
		return;
	}
	KUNIT_EXPECT_EQ(test, ep_u32(it->events),
			ep_u32(c->events | EPOLLERR | EPOLLHUP));
	KUNIT_EXPECT_EQ(test, it->data, 2);
	if (c->events & EPOLLWAKEUP)
		KUNIT_EXPECT_PTR_EQ(test, it->ws, before.item[0].ws);
	else
		KUNIT_EXPECT_PTR_EQ(test, it->ws, NULL);
	KUNIT_EXPECT_TRUE(test, it->on_rdllist);
}

/* EPOLL_CTL_DISABLE disarms an armed oneshot item, and only that */

struct ep_disable_case {
	const char *name;
	bool add;		/* register the source at all */
	__poll_t events;	/* events of the ADD */
	__poll_t ready;		/* what the source reports */
	bool deliver;		/* epoll_wait() before the DISABLE */
	int error;		/* result of the DISABLE */
};

static const struct ep_disable_case ep_disable_cases[] = {
	{ "armed_idle", true, EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, 0, false, 0 },
	{ "armed_queued", true, EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, EPOLLIN,
	  false, 0 },
	{ "armed_queued_no_wakeup", true, EPOLLIN | EPOLLONESHOT, EPOLLIN,
	  false, 0 },
	{ "armed_queued_edge", true,
	  EPOLLIN | EPOLLONESHOT | EPOLLET | EPOLLWAKEUP, EPOLLIN, false, 0 },
	{ "delivered", true, EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, EPOLLIN,
	  true, -EBUSY },
	{ "level", true, EPOLLIN | EPOLLWAKEUP, EPOLLIN, false, -EINVAL },
	{ "edge", true, EPOLLIN | EPOLLET | EPOLLWAKEUP, EPOLLIN, false,
	  -EINVAL },
	{ "unregistered", false, 0, EPOLLIN, false, -ENOENT },
};

KUNIT_ARRAY_PARAM_DESC(ep_disable, ep_disable_cases, name);

/* After the DISABLE: item 0 untouched on an error, else disarmed and released. */
static noinline_for_stack void
ep_disable_check_result(struct ep_test *t, const struct ep_disable_case *c,
			const struct ep_test_state *before,
			const struct ep_test_state *s)
{
	const struct ep_test_item *it = &s->item[0];
	struct kunit *test = t->test;

	KUNIT_EXPECT_TRUE(test, s->item[1].on_rdllist);
	KUNIT_EXPECT_EQ(test, s->rd_order[0], 1);
	if (!c->add) {
		KUNIT_EXPECT_PTR_EQ(test, it->epi, NULL);
		return;
	}
	KUNIT_EXPECT_EQ(test, it->data, 1);
	KUNIT_EXPECT_PTR_EQ(test, it->ws, before->item[0].ws);
	if (c->error) {
		/* Nothing changed. */
		KUNIT_EXPECT_EQ(test, ep_u32(it->events),
				ep_u32(before->item[0].events));
		KUNIT_EXPECT_EQ(test, it->on_rdllist, before->item[0].on_rdllist);
		KUNIT_EXPECT_EQ(test, it->ws_active, before->item[0].ws_active);
	} else {
		/* Disarmed, unlinked, and its wakeup source released. */
		KUNIT_EXPECT_EQ(test, ep_u32(it->events),
				ep_u32(ep_test_stored(c->events) &
				       EP_PRIVATE_BITS));
		KUNIT_EXPECT_FALSE(test, it->linked);
		KUNIT_EXPECT_FALSE(test, it->ws_active);
		KUNIT_EXPECT_EQ(test, s->nr_rd, 1);
	}
}

/* Then wakeups; a oneshot item is disarmed until MOD re-arms it. */
static noinline_for_stack void
ep_disable_then_rearm(struct ep_test *t, const struct ep_disable_case *c,
		      struct ep_test_state *s, struct epoll_event *ev)
{
	bool oneshot = c->events & EPOLLONESHOT;
	const struct ep_test_item *it = &s->item[0];
	struct kunit *test = t->test;

	/* Wakeups, with and without a key, queue only an armed item. */
	ep_test_fire(t, 0, EPOLLIN, EPOLLIN);
	ep_test_fire(t, 0, EPOLLIN, 0);
	ep_test_check(t, s, "wakeups after disable");
	KUNIT_EXPECT_EQ(test, it->on_rdllist, !oneshot);
	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev),
			oneshot ? 1 : 2);
	ep_test_check(t, s, "wait after disable");

	if (!oneshot)
		return;
	/* A second DISABLE finds the item disarmed. */
	KUNIT_EXPECT_EQ(test, ep_test_ctl(t, EPOLL_CTL_DISABLE, 0, 0, 0),
			-EBUSY);
	/* MOD re-arms it: it is ready, so it is queued and reported again. */
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_MOD, 0, c->events, 3), 0);
	ep_test_check(t, s, "rearm");
	KUNIT_EXPECT_TRUE(test, it->on_rdllist);
	KUNIT_EXPECT_EQ(test, it->ws_active,
			!!(ep_test_stored(c->events) & EPOLLWAKEUP));
	KUNIT_EXPECT_EQ(test, ep_test_ctl(t, EPOLL_CTL_DISABLE, 0, 0, 0), 0);
	ep_test_check(t, s, "disable after rearm");
	KUNIT_EXPECT_FALSE(test, it->linked);
}

static void eventpoll_disable_item(struct kunit *test)
{
	const struct ep_disable_case *c = test->param_value;
	struct ep_test_state *before = ep_test_state_alloc(test);
	struct ep_test_state *s = ep_test_state_alloc(test);
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct ep_test *t = test->priv;

	ep_test_set(t, 0, c->ready);
	/* A bystander queued ahead of item 0 must stay where it is. */
	ep_test_set(t, 1, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 1,
					  EPOLLIN | EPOLLWAKEUP, 2), 0);
	if (c->add)
		KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
						  c->events, 1), 0);
	/* The bystander is level-triggered: it is queued again. */
	if (c->deliver)
		KUNIT_ASSERT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 2);
	ep_test_check(t, before, "before");

	KUNIT_EXPECT_EQ(test, ep_test_ctl(t, EPOLL_CTL_DISABLE, 0, 0, 0),
			c->error);
	ep_test_check(t, s, "disable");
	ep_disable_check_result(t, c, before, s);
	if (c->add)
		ep_disable_then_rearm(t, c, s, ev);
}

/*
 * A reproducible random sequence of operations over all sources, checked
 * after every step against the invariant and against a model of what each
 * item should be.
 */

#define EP_WALK_SEED	0x65706f6c6cULL
#define EP_WALK_STEPS	500

struct ep_model {
	bool registered[EP_TEST_NR_SRC];
	__poll_t events[EP_TEST_NR_SRC];
	u64 data[EP_TEST_NR_SRC];
	__poll_t ready[EP_TEST_NR_SRC];
	/* The ready list, head first; during a scan, its batch */
	int order[EP_TEST_NR_SRC];
	int nr_order;
	/* Items the wakeups of a scan put on the overflow list, oldest first */
	int ovf[EP_TEST_NR_SRC];
	int nr_ovf;
	/* During a scan: the ready list, where delivery requeues level items */
	int rdl[EP_TEST_NR_SRC];
	int nr_rdl;
	bool scanning;
};

static int ep_model_find(const int *list, int nr, int i)
{
	int k;

	for (k = 0; k < nr; k++)
		if (list[k] == i)
			return k;
	return -1;
}

static void ep_model_append(int *list, int *nr, int i)
{
	if (ep_model_find(list, *nr, i) < 0)
		list[(*nr)++] = i;
}

static void ep_model_drop(int *list, int *nr, int i)
{
	int k = ep_model_find(list, *nr, i);

	if (k < 0)
		return;
	memmove(&list[k], &list[k + 1], (--*nr - k) * sizeof(*list));
}

static bool ep_model_queued(const struct ep_model *m, int i)
{
	return ep_model_find(m->order, m->nr_order, i) >= 0 ||
	       ep_model_find(m->ovf, m->nr_ovf, i) >= 0 ||
	       ep_model_find(m->rdl, m->nr_rdl, i) >= 0;
}

/* ep_insert() and ep_modify() queue the item if the poll finds it ready. */
static void ep_model_ctl(struct ep_model *m, int i, __poll_t events, u64 data)
{
	if (!IS_ENABLED(CONFIG_PM_SLEEP))
		events &= ~EPOLLWAKEUP;
	m->registered[i] = true;
	m->events[i] = events | EPOLLERR | EPOLLHUP;
	m->data[i] = data;
	if (m->ready[i] & m->events[i])
		ep_model_append(m->order, &m->nr_order, i);
}

static void ep_model_wakeup(struct ep_model *m, int i, __poll_t key)
{
	if (!m->registered[i] || !(m->events[i] & ~EP_PRIVATE_BITS))
		return;
	if (key && !(key & m->events[i]))
		return;
	if (m->scanning)
		ep_model_append(m->ovf, &m->nr_ovf, i);
	else
		ep_model_append(m->order, &m->nr_order, i);
}

/* ep_disable(): the expected result, and the item disarmed and unqueued. */
static int ep_model_disable(struct ep_model *m, int i)
{
	if (!m->registered[i])
		return -ENOENT;
	if (!(m->events[i] & EPOLLONESHOT))
		return -EINVAL;
	if (!(m->events[i] & ~EP_PRIVATE_BITS))
		return -EBUSY;
	m->events[i] &= EP_PRIVATE_BITS;
	ep_model_drop(m->order, &m->nr_order, i);
	return 0;
}

/* ep_send_events(): returns the number of events, stored in @out. */
static int ep_model_wait(struct ep_model *m, int maxevents,
			 struct epoll_event *out)
{
	int batch[EP_TEST_NR_SRC], nr_batch = m->nr_order;
	int k, res = 0;

	memcpy(batch, m->order, sizeof(batch));
	m->nr_order = 0;
	for (k = 0; k < nr_batch && res < maxevents; k++) {
		int i = batch[k];
		__poll_t revents = m->ready[i] & m->events[i];

		if (!revents)
			continue;
		out[res].events = revents;
		out[res].data = m->data[i];
		res++;
		if (m->events[i] & EPOLLONESHOT)
			m->events[i] &= EP_PRIVATE_BITS;
		else if (!(m->events[i] & EPOLLET))
			ep_model_append(m->order, &m->nr_order, i);
	}
	/* ep_done_scan() puts what was not looked at back at the head. */
	memmove(&m->order[nr_batch - k], m->order,
		m->nr_order * sizeof(*m->order));
	memcpy(m->order, &batch[k], (nr_batch - k) * sizeof(*m->order));
	m->nr_order += nr_batch - k;
	return res;
}

/*
 * ep_deliver_event() during a scan, for the head of the batch: returns 1
 * and stores the event in @out if the item reports one.
 */
static int ep_model_deliver(struct ep_model *m, struct epoll_event *out)
{
	int i = m->order[0];
	__poll_t revents = m->ready[i] & m->events[i];

	ep_model_drop(m->order, &m->nr_order, i);
	if (!revents)
		return 0;
	out->events = revents;
	out->data = m->data[i];
	if (m->events[i] & EPOLLONESHOT)
		m->events[i] &= EP_PRIVATE_BITS;
	else if (!(m->events[i] & EPOLLET))
		ep_model_append(m->rdl, &m->nr_rdl, i);
	return 1;
}

/*
 * ep_done_scan(): the rest of the batch, then what only the wakeups
 * queued, except the items the scan disarmed, then the items delivery
 * requeued.
 */
static void ep_model_done_scan(struct ep_model *m)
{
	int k, i;

	for (k = 0; k < m->nr_ovf; k++) {
		i = m->ovf[k];
		if (ep_model_find(m->rdl, m->nr_rdl, i) < 0 &&
		    (m->events[i] & ~EP_PRIVATE_BITS))
			ep_model_append(m->order, &m->nr_order, i);
	}
	for (k = 0; k < m->nr_rdl; k++)
		ep_model_append(m->order, &m->nr_order, m->rdl[k]);
	m->nr_ovf = 0;
	m->nr_rdl = 0;
	m->scanning = false;
}

static void ep_model_compare(struct ep_test *t, const struct ep_model *m,
			     const struct ep_test_state *s, const char *step)
{
	struct kunit *test = t->test;
	int i, k;

	for (i = 0; i < EP_TEST_NR_SRC; i++) {
		const struct ep_test_item *it = &s->item[i];

		KUNIT_EXPECT_EQ_MSG(test, !!it->epi, m->registered[i],
				    "%s: item %d registered", step, i);
		if (!it->epi || !m->registered[i])
			continue;
		KUNIT_EXPECT_EQ_MSG(test, ep_u32(it->events),
				    ep_u32(m->events[i]),
				    "%s: item %d events", step, i);
		KUNIT_EXPECT_EQ_MSG(test, it->data, m->data[i],
				    "%s: item %d data", step, i);
		KUNIT_EXPECT_EQ_MSG(test, ep_test_queued(it),
				    ep_model_queued(m, i),
				    "%s: item %d queued", step, i);
		if (m->scanning)
			KUNIT_EXPECT_EQ_MSG(test, it->on_ovflist,
					    ep_model_find(m->ovf, m->nr_ovf,
							  i) >= 0,
					    "%s: item %d on the ovflist", step,
					    i);
	}
	if (m->scanning)
		return;
	KUNIT_EXPECT_EQ_MSG(test, s->nr_rd, m->nr_order,
			    "%s: length of the ready list", step);
	for (k = 0; k < s->nr_rd && k < m->nr_order; k++)
		KUNIT_EXPECT_EQ_MSG(test, s->rd_order[k], m->order[k],
				    "%s: ready list entry %d", step, k);
}

static __poll_t ep_walk_events(struct rnd_state *rnd)
{
	static const __poll_t modes[] = {
		0, EPOLLET, EPOLLONESHOT, EPOLLET | EPOLLONESHOT,
	};
	u32 r = prandom_u32_state(rnd);
	__poll_t events = modes[r & 3];

	if (r & 4)
		events |= EPOLLIN;
	if (r & 8)
		events |= EPOLLOUT;
	if (r & 16)
		events |= EPOLLPRI;
	if (r & 32)
		events |= EPOLLWAKEUP;
	return events;
}

static __poll_t ep_walk_mask(struct rnd_state *rnd)
{
	u32 r = prandom_u32_state(rnd);
	__poll_t mask = 0;

	if (r & 1)
		mask |= EPOLLIN;
	if (r & 2)
		mask |= EPOLLOUT;
	if (r & 4)
		mask |= EPOLLPRI;
	if (!(r & 0x38))
		mask |= EPOLLHUP;
	return mask;
}

enum ep_walk_op {
	EP_WALK_ADD, EP_WALK_MOD, EP_WALK_DEL, EP_WALK_WAKEUP, EP_WALK_SET,
	EP_WALK_WAIT, EP_WALK_SCAN, EP_WALK_DISABLE, EP_WALK_NR_OPS
};

static const char * const ep_walk_op_names[] = {
	"add", "mod", "del", "wakeup", "set", "wait", "scan", "disable",
};

/* How often each operation is drawn, out of the sum of these */
static const int ep_walk_weight[EP_WALK_NR_OPS] = { 3, 3, 1, 4, 1, 3, 3, 2 };

static enum ep_walk_op ep_walk_op(struct rnd_state *rnd)
{
	int op, sum = 0, r;

	for (op = 0; op < EP_WALK_NR_OPS; op++)
		sum += ep_walk_weight[op];
	r = prandom_u32_state(rnd) % sum;
	for (op = 0; r >= ep_walk_weight[op]; op++)
		r -= ep_walk_weight[op];
	return op;
}

/*
 * Open a scan, and wake sources and deliver from the head of the batch in
 * random order, as wakeups on other CPUs meet ep_send_events(); check,
 * end the scan, and compare the events delivered. Returns their number.
 * Not inlined: with clang and KASAN, its checks and the random walk's
 * together need more than 2048 bytes of stack.
 */
static noinline_for_stack int
ep_walk_scan(struct ep_test *t, struct ep_model *m, struct rnd_state *rnd,
	     const char *step)
{
	struct epoll_event ev[EP_TEST_NR_SRC], want[EP_TEST_NR_SRC];
	struct epoll_event __user *uevents = t->uevents;
	int k, n = 0, nr = 1 + prandom_u32_state(rnd) % 6;
	struct eventpoll *ep = t->ep;
	struct ep_test_state s;
	LIST_HEAD(batch);

	mutex_lock(&ep->mtx);
	ep_start_scan(ep, &batch);
	t->scan_batch = &batch;
	m->scanning = true;
	for (k = 0; k < nr; k++) {
		int i = prandom_u32_state(rnd) % EP_TEST_NR_SRC;
		__poll_t mask = ep_walk_mask(rnd);
		int got, expected;

		if (m->nr_order && prandom_u32_state(rnd) % 2) {
			i = m->order[0];
			expected = ep_model_deliver(m, &want[n]);
			got = ep_test_deliver(t, i, &uevents);
			KUNIT_EXPECT_EQ_MSG(t->test, got, expected,
					    "%s: delivery of item %d", step, i);
			n += expected;
			continue;
		}
		/* Half of the wakeups are for items the scan has yet to see. */
		if (m->nr_order && prandom_u32_state(rnd) % 2)
			i = m->order[prandom_u32_state(rnd) % m->nr_order];
		m->ready[i] = mask;
		ep_model_wakeup(m, i, mask);
		ep_test_fire(t, i, mask, mask);
	}
	__ep_test_check(t, &s, step);
	ep_model_compare(t, m, &s, step);
	ep_test_done_scan(t);
	mutex_unlock(&ep->mtx);
	ep_model_done_scan(m);

	if (copy_from_user(ev, t->uevents, n * sizeof(ev[0])))
		KUNIT_FAIL(t->test, "cannot read the user buffer");
	for (k = 0; k < n; k++) {
		KUNIT_EXPECT_EQ_MSG(t->test, ep_u32(ev[k].events),
				    ep_u32(want[k].events),
				    "%s: event %d", step, k);
		KUNIT_EXPECT_EQ_MSG(t->test, ev[k].data, want[k].data,
				    "%s: event %d", step, k);
	}
	return n;
}

static void eventpoll_random_walk(struct kunit *test)
{
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct epoll_event *want = ep_test_events_alloc(test);
	struct ep_test_state *s = ep_test_state_alloc(test);
	int count[EP_WALK_NR_OPS] = {}, delivered = 0, disarmed = 0;
	struct ep_test *t = test->priv;
	struct ep_model m = {};
	struct rnd_state rnd;
	char step[64];
	int n, k;

	prandom_seed_state(&rnd, EP_WALK_SEED);
	for (n = 0; n < EP_WALK_STEPS; n++) {
		int i = prandom_u32_state(&rnd) % EP_TEST_NR_SRC;
		enum ep_walk_op op = ep_walk_op(&rnd);
		u64 data = (u64)prandom_u32_state(&rnd) << 32;
		__poll_t events, mask;
		int error, nr;

		data |= prandom_u32_state(&rnd);

		snprintf(step, sizeof(step), "seed %#llx step %d: %s %d",
			 EP_WALK_SEED, n, ep_walk_op_names[op], i);
		count[op]++;
		switch (op) {
		case EP_WALK_ADD:
			events = ep_walk_events(&rnd);
			error = ep_test_ctl(t, EPOLL_CTL_ADD, i, events, data);
			KUNIT_EXPECT_EQ_MSG(test, error,
					    m.registered[i] ? -EEXIST : 0,
					    "%s", step);
			if (!m.registered[i])
				ep_model_ctl(&m, i, events, data);
			break;
		case EP_WALK_MOD:
			events = ep_walk_events(&rnd);
			error = ep_test_ctl(t, EPOLL_CTL_MOD, i, events, data);
			KUNIT_EXPECT_EQ_MSG(test, error,
					    m.registered[i] ? 0 : -ENOENT,
					    "%s", step);
			if (m.registered[i])
				ep_model_ctl(&m, i, events, data);
			break;
		case EP_WALK_DEL:
			error = ep_test_ctl(t, EPOLL_CTL_DEL, i, 0, 0);
			KUNIT_EXPECT_EQ_MSG(test, error,
					    m.registered[i] ? 0 : -ENOENT,
					    "%s", step);
			m.registered[i] = false;
			ep_model_drop(m.order, &m.nr_order, i);
			break;
		case EP_WALK_WAKEUP:
			/* A wakeup without a key for one in four */
			mask = ep_walk_mask(&rnd);
			m.ready[i] = mask;
			if (prandom_u32_state(&rnd) % 4) {
				ep_model_wakeup(&m, i, mask);
				ep_test_fire(t, i, mask, mask);
			} else {
				ep_model_wakeup(&m, i, 0);
				ep_test_fire(t, i, mask, 0);
			}
			break;
		case EP_WALK_SET:
			/* Readiness lost or gained without a wakeup */
			mask = ep_walk_mask(&rnd);
			m.ready[i] = mask;
			ep_test_set(t, i, mask);
			break;
		case EP_WALK_WAIT:
			nr = 1 + prandom_u32_state(&rnd) % EP_TEST_NR_SRC;
			error = ep_model_wait(&m, nr, want);
			KUNIT_EXPECT_EQ_MSG(test, ep_test_wait(t, nr, ev), error,
					    "%s", step);
			for (k = 0; k < error; k++) {
				KUNIT_EXPECT_EQ_MSG(test, ep_u32(ev[k].events),
						    ep_u32(want[k].events),
						    "%s: event %d", step, k);
				KUNIT_EXPECT_EQ_MSG(test, ev[k].data,
						    want[k].data,
						    "%s: event %d", step, k);
			}
			delivered += error;
			break;
		case EP_WALK_SCAN:
			delivered += ep_walk_scan(t, &m, &rnd, step);
			break;
		case EP_WALK_DISABLE:
			error = ep_test_ctl(t, EPOLL_CTL_DISABLE, i, 0, 0);
			KUNIT_EXPECT_EQ_MSG(test, error, ep_model_disable(&m, i),
					    "%s", step);
			disarmed += !error;
			break;
		default:
			break;
		}
		ep_test_check(t, s, step);
		ep_model_compare(t, &m, s, step);
		if (test->status == KUNIT_FAILURE)
			break;
	}
	kunit_info(test,
		   "%d steps: add %d mod %d del %d wakeup %d set %d wait %d scan %d disable %d, %d events, %d disarmed\n",
		   n, count[EP_WALK_ADD], count[EP_WALK_MOD],
		   count[EP_WALK_DEL], count[EP_WALK_WAKEUP],
		   count[EP_WALK_SET], count[EP_WALK_WAIT],
		   count[EP_WALK_SCAN], count[EP_WALK_DISABLE], delivered,
		   disarmed);
}

/*
 * Only an ADD or MOD with EPOLLWAKEUP asks for CAP_BLOCK_SUSPEND. A
 * successful capable() marks the task as having used a privilege
 * (PF_SUPERPRIV, which process accounting reports), and an LSM audits the
 * question, with a denial for every unprivileged caller; a call that does
 * not need the capability must not ask. The DEL passes an event with
 * EPOLLWAKEUP, as a caller's leftover buffer may: DEL ignores its event.
 */
struct ep_ask_case {
	const char *name;
	int op;
	__poll_t events;
	bool asks;		/* with CONFIG_PM_SLEEP */
};

static const struct ep_ask_case ep_ask_cases[] = {
	{ "add_epollwakeup", EPOLL_CTL_ADD, EPOLLIN | EPOLLWAKEUP, true },
	{ "add", EPOLL_CTL_ADD, EPOLLIN, false },
	{ "mod", EPOLL_CTL_MOD, EPOLLIN | EPOLLOUT, false },
	{ "del", EPOLL_CTL_DEL, EPOLLIN | EPOLLWAKEUP, false },
};

KUNIT_ARRAY_PARAM_DESC(ep_ask, ep_ask_cases, name);

static void eventpoll_capability_asked(struct kunit *test)
{
	const struct ep_ask_case *c = test->param_value;
	unsigned int saved = current->flags & PF_SUPERPRIV;
	struct ep_test *t = test->priv;
	bool asked;
	int error;

	if (!capable(CAP_BLOCK_SUSPEND))
		kunit_skip(test, "the test runs without CAP_BLOCK_SUSPEND");
	if (c->op != EPOLL_CTL_ADD)
		KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, EPOLLIN, 1),
				0);

	current->flags &= ~PF_SUPERPRIV;
	error = ep_test_ctl(t, c->op, 0, c->events, 2);
	asked = current->flags & PF_SUPERPRIV;
	current->flags |= saved;

	KUNIT_EXPECT_EQ(test, error, 0);
	KUNIT_EXPECT_EQ(test, asked, c->asks && EP_TEST_WS);
}

/*
 * An ADD of a file that is not an epoll file, to an instance that no other
 * instance watches, takes neither epnested_mutex nor the loop and path
 * checks, which serialise the nested ADDs of the whole system. A check
 * leaves no instance marked as visited by it (ep->gen), else the next ADD
 * to one would take them again. With epnested_mutex held by the case, a
 * nonblocking ADD that wants it fails with -EAGAIN.
 */
static int ep_test_add_nested_busy(struct eventpoll *ep, struct file *file,
				   int fd)
{
	int error;

	mutex_lock(&epnested_mutex);
	error = ep_test_ctl_file(ep->file, EPOLL_CTL_ADD, file, fd, EPOLLIN, 0,
				 true);
	mutex_unlock(&epnested_mutex);
	return error;
}

static void eventpoll_add_fast_path(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct eventpoll *outer;

	/*
	 * Until the first full check since boot ends, every instance looks
	 * like one being checked (generation 0): have one done.
	 */
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 2, EPOLLIN, 0), 0);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_DEL, 2, 0, 0), 0);

	KUNIT_EXPECT_EQ(test, ep_test_add_nested_busy(t->ep, t->src[0].file,
						      t->src[0].fd), 0);

	/* An instance that watches the test's: a full check. */
	KUNIT_ASSERT_EQ(test, ep_test_instance(test, &outer), 0);
	KUNIT_EXPECT_EQ(test, ep_test_ctl_file(outer->file, EPOLL_CTL_ADD,
					       t->ep->file, EP_TEST_NR_SRC,
					       EPOLLIN, 0, false), 0);
	mutex_lock(&epnested_mutex);
	KUNIT_EXPECT_NE(test, t->ep->gen, loop_check_gen);
	KUNIT_EXPECT_NE(test, outer->gen, loop_check_gen);
	mutex_unlock(&epnested_mutex);

	/* Nobody watches the outer instance: the fast path again. */
	KUNIT_EXPECT_EQ(test, ep_test_add_nested_busy(outer, t->src[1].file,
						      t->src[1].fd), 0);
}

/*
 * A task being killed takes no event: epoll_wait() returns -EINTR and
 * leaves the item queued, with its wakeup source held, for the other
 * waiters of the instance. A kthread lets SIGKILL be sent to it only
 * once it allows the signal.
 */
static void eventpoll_deliver_fatal_signal(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct epoll_event ev[EP_TEST_NR_SRC];
	struct ep_test_state s;
	int n;

	ep_test_set(t, 0, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, 3),
			0);
	allow_signal(SIGKILL);
	send_sig(SIGKILL, current, 1);
	KUNIT_EXPECT_TRUE(test, fatal_signal_pending(current));
	n = ep_test_wait(t, EP_TEST_NR_SRC, ev);
	flush_signals(current);
	disallow_signal(SIGKILL);

	KUNIT_EXPECT_EQ(test, n, -EINTR);
	ep_test_check(t, &s, "killed wait");
	KUNIT_EXPECT_TRUE(test, s.item[0].on_rdllist);
	KUNIT_EXPECT_EQ(test, s.item[0].ws_active, EP_TEST_WS);
	KUNIT_EXPECT_EQ(test, ep_u32(s.item[0].events),
			ep_u32(ep_test_stored(EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP |
					      EPOLLERR | EPOLLHUP)));

	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ev[0].data, 3);
}

/*
 * A target's ->poll() is asked for the events of the item, not for all:
 * a target may skip the work for the others, and some do (a unix datagram
 * socket looks at its peer's queue only for EPOLLOUT).
 */
static void eventpoll_poll_key(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct epoll_event ev[EP_TEST_NR_SRC];
	struct ep_test_state s;

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, EPOLLIN, 1), 0);
	ep_test_check(t, &s, "add");
	KUNIT_EXPECT_EQ(test, ep_u32(t->src[0].key), ep_u32(s.item[0].events));

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_MOD, 0,
					  EPOLLOUT | EPOLLET, 2), 0);
	ep_test_check(t, &s, "mod");
	KUNIT_EXPECT_EQ(test, ep_u32(t->src[0].key), ep_u32(s.item[0].events));

	t->src[0].key = 0;
	ep_test_fire(t, 0, EPOLLOUT, EPOLLOUT);
	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ep_u32(t->src[0].key), ep_u32(s.item[0].events));
}

static struct kunit_case eventpoll_test_cases[] = {
	KUNIT_CASE_PARAM(eventpoll_insert_ready, ep_insert_gen_params),
	KUNIT_CASE_PARAM(eventpoll_callback_queue, ep_callback_gen_params),
	KUNIT_CASE_PARAM(eventpoll_exclusive_wakeup, ep_exclusive_gen_params),
	KUNIT_CASE(eventpoll_pollfree),
	KUNIT_CASE(eventpoll_scan_wakes_waiter),
	KUNIT_CASE(eventpoll_ctl_wakes_pollers),
	KUNIT_CASE_PARAM(eventpoll_deliver_mode, ep_deliver_gen_params),
	KUNIT_CASE(eventpoll_deliver_not_ready),
	KUNIT_CASE(eventpoll_deliver_fault),
	KUNIT_CASE(eventpoll_deliver_maxevents),
	KUNIT_CASE(eventpoll_scan_overflow),
	KUNIT_CASE_PARAM(eventpoll_scan_deliver_oneshot,
			 ep_scan_deliver_gen_params),
	KUNIT_CASE_PARAM(eventpoll_modify_wakeup, ep_modify_gen_params),
	KUNIT_CASE_PARAM(eventpoll_remove_item, ep_remove_gen_params),
	KUNIT_CASE_PARAM(eventpoll_wakeup_capability, ep_cap_gen_params),
	KUNIT_CASE_PARAM(eventpoll_wakeup_alloc_failure, ep_alloc_gen_params),
	KUNIT_CASE_PARAM(eventpoll_disable_item, ep_disable_gen_params),
	KUNIT_CASE(eventpoll_random_walk),
	KUNIT_CASE_PARAM(eventpoll_capability_asked, ep_ask_gen_params),
	KUNIT_CASE(eventpoll_add_fast_path),
	KUNIT_CASE(eventpoll_deliver_fatal_signal),
	KUNIT_CASE(eventpoll_poll_key),
	{}
};

static struct kunit_suite eventpoll_test_suite = {
	.name = "eventpoll",
	.init = ep_test_init,
	.test_cases = eventpoll_test_cases,
};

kunit_test_suite(eventpoll_test_suite);
