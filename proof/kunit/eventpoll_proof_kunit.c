// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The local proof layer's KUnit cases for eventpoll: what the posted suite
 * (eventpoll_kunit.c, whose helpers these cases use) leaves to white-box
 * checks: whom a wakeup wakes, POLLFREE, a seeded random walk checked
 * against a model, who asks for CAP_BLOCK_SUSPEND (PF_SUPERPRIV), the
 * fast path of EPOLL_CTL_ADD (epnested_mutex), the generation a failed
 * loop check leaves and the first check since boot, the wakeup of pollers
 * at release, a fatal signal in delivery, and the key a target's ->poll()
 * is asked for. Never posted upstream.
 */
#include <linux/prandom.h>
#include <linux/sched/signal.h>

/* do_epoll_ctl_file() on any files, blocking or not. */
static noinline_for_stack int ep_proof_ctl_file(struct file *epfile, int op,
						struct file *file, int fd,
						__poll_t events, u64 data,
						bool nonblock)
{
	struct epoll_event epds = { .events = events, .data = data };
	struct epoll_key tf = { .file = file, .fd = fd };

	return do_epoll_ctl_file(epfile, op, &tf, &epds, nonblock);
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
	struct ep_test_state *s = ep_test_state_alloc(test);

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->events, 1), 0);
	next = ep_test_waiter_add(test, &t->src[0].wq);
	if (c->ep_waiter)
		ep_waiter = ep_test_waiter_add(test, &t->ep->wq);

	ep_test_set(t, 0, c->key ? c->key : EPOLLIN);
	if (c->sync)
		wake_up_interruptible_sync_poll(&t->src[0].wq, c->key);
	else
		wake_up_poll(&t->src[0].wq, c->key);

	ep_test_check(t, s, "wakeup");
	KUNIT_EXPECT_TRUE(test, s->item[0].on_rdllist);
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
	struct ep_test_state *s = ep_test_state_alloc(test);
	struct epitem *epi;

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  EPOLLIN | EPOLLWAKEUP, 1), 0);
	KUNIT_ASSERT_FALSE(test, list_empty(&t->src[0].wq.head));

	wake_up_pollfree(&t->src[0].wq);
	KUNIT_EXPECT_TRUE(test, list_empty(&t->src[0].wq.head));
	mutex_lock(&t->ep->mtx);
	epi = ep_test_find(t, 0);
	pwq = epi ? epi->pwqlist : NULL;
	KUNIT_EXPECT_NOT_NULL(test, pwq);
	if (pwq)
		KUNIT_EXPECT_NULL(test, READ_ONCE(pwq->whead));
	mutex_unlock(&t->ep->mtx);
	/* The hangup itself is an event, held like any other. */
	ep_test_check(t, s, "pollfree");
	KUNIT_EXPECT_TRUE(test, s->item[0].on_rdllist);

	KUNIT_EXPECT_EQ(test, ep_test_ctl(t, EPOLL_CTL_DEL, 0, 0, 0), 0);
	ep_test_check(t, s, "del");
}

/*
 * A scan that leaves an event on the ready list wakes the next task in
 * epoll_wait(); one that leaves the list empty wakes nobody.
 */
static void eventpoll_scan_wakes_waiter(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct ep_test_waiter *waiter;
	struct eventpoll *ep = t->ep;
	struct ep_test_state *s = ep_test_state_alloc(test);
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
	__ep_test_check(t, s, "empty scan");
	mutex_unlock(&ep->mtx);
	KUNIT_EXPECT_TRUE(test, s->item[0].on_rdllist);
	KUNIT_EXPECT_EQ(test, waiter->nr_wakeups, 1);

	/* Delivered, edge-triggered: nothing is left to wake anyone for. */
	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	ep_test_check(t, s, "wait");
	KUNIT_EXPECT_EQ(test, s->nr_rd, 0);
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
	struct ep_test_state *s = ep_test_state_alloc(test);

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
	ep_test_check(t, s, "ctl");
	KUNIT_EXPECT_EQ(test, s->nr_rd, 2);
}

/*
 * A short buffer delivers from the head of the ready list; what it had no
 * room for stays at the head, ahead of the level-triggered items requeued.
 */
static void eventpoll_deliver_maxevents(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct ep_test_state *s = ep_test_state_alloc(test);
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
	ep_test_check(t, s, "first wait");
	KUNIT_ASSERT_EQ(test, s->nr_rd, 3);
	KUNIT_EXPECT_EQ(test, s->rd_order[0], 2);
	KUNIT_EXPECT_EQ(test, s->rd_order[1], 0);
	KUNIT_EXPECT_EQ(test, s->rd_order[2], 1);

	KUNIT_ASSERT_EQ(test, ep_test_wait(t, 1, ev), 1);
	KUNIT_EXPECT_EQ(test, ev[0].data, 2);
	ep_test_check(t, s, "second wait");
	KUNIT_EXPECT_EQ(test, s->nr_rd, 3);
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
	struct ep_test_state *s = ep_test_state_alloc(t->test);
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
	__ep_test_check(t, s, step);
	ep_model_compare(t, m, s, step);
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
	error = ep_proof_ctl_file(ep->file, EPOLL_CTL_ADD, file, fd, EPOLLIN, 0,
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
	KUNIT_EXPECT_EQ(test, ep_proof_ctl_file(outer->file, EPOLL_CTL_ADD,
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
 * Every loop check ends by moving loop_check_gen past the generation it
 * stamped on the instances it visited, a failed one too: otherwise they
 * keep looking like instances under check, and every ADD to them takes
 * the full check.
 */
static void eventpoll_failed_loop_check(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct eventpoll *outer;

	KUNIT_ASSERT_EQ(test, ep_test_instance(test, &outer), 0);
	KUNIT_ASSERT_EQ(test, ep_proof_ctl_file(outer->file, EPOLL_CTL_ADD,
					       t->ep->file, EP_TEST_NR_SRC,
					       EPOLLIN, 0, false), 0);
	KUNIT_EXPECT_EQ(test, ep_proof_ctl_file(t->ep->file, EPOLL_CTL_ADD,
					       outer->file, EP_TEST_NR_SRC + 1,
					       EPOLLIN, 0, false), -ELOOP);
	mutex_lock(&epnested_mutex);
	KUNIT_EXPECT_NE(test, t->ep->gen, loop_check_gen);
	KUNIT_EXPECT_NE(test, outer->gen, loop_check_gen);
	mutex_unlock(&epnested_mutex);
}

/*
 * At boot loop_check_gen and every instance's generation are 0, so the
 * first loop check must move loop_check_gen on before it walks: else every
 * instance looks visited by it, the walk stops at once, and a loop goes
 * unnoticed. The case gives two instances of its own that state, as if
 * its check were the first since boot (the other instances keep older
 * generations than any loop_check_gen takes meanwhile), closes a loop with
 * them, and moves loop_check_gen past every value it took.
 */
static void eventpoll_first_loop_check(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct eventpoll *outer;
	u64 saved;
	int error;

	KUNIT_ASSERT_EQ(test, ep_test_instance(test, &outer), 0);
	KUNIT_ASSERT_EQ(test, ep_proof_ctl_file(outer->file, EPOLL_CTL_ADD,
					       t->ep->file, EP_TEST_NR_SRC,
					       EPOLLIN, 0, false), 0);
	mutex_lock(&epnested_mutex);
	saved = loop_check_gen;
	loop_check_gen = 0;
	t->ep->gen = 0;
	outer->gen = 0;
	mutex_unlock(&epnested_mutex);

	error = ep_proof_ctl_file(t->ep->file, EPOLL_CTL_ADD, outer->file,
				  EP_TEST_NR_SRC + 1, EPOLLIN, 0, false);
	/* A loop was made: undo it before anything polls the instances. */
	if (!error)
		ep_proof_ctl_file(t->ep->file, EPOLL_CTL_DEL, outer->file,
				  EP_TEST_NR_SRC + 1, 0, 0, false);

	mutex_lock(&epnested_mutex);
	loop_check_gen = max(saved, loop_check_gen) + 1;
	mutex_unlock(&epnested_mutex);

	KUNIT_EXPECT_EQ(test, error, -ELOOP);
}

/*
 * The release of an epoll file wakes whoever still waits on its
 * poll_wait, so that nothing sleeps on a queue about to be freed. No task
 * can be such a waiter (poll(2) holds a reference to the file): the case
 * queues one of its own, which leaves the queue when woken, and holds a
 * reference to the instance so that it can look after the release.
 */
static int ep_test_waiter_wake_once(wait_queue_entry_t *wait,
				    unsigned int mode, int sync, void *key)
{
	list_del_init(&wait->entry);
	return ep_test_waiter_wake(wait, mode, sync, key);
}

static void eventpoll_release_wakes_pollers(struct kunit *test)
{
	struct ep_test_waiter *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	struct eventpoll *ep;

	KUNIT_ASSERT_NOT_NULL(test, w);
	KUNIT_ASSERT_EQ(test, ep_test_instance(test, &ep), 0);
	init_waitqueue_func_entry(&w->wait, ep_test_waiter_wake_once);
	add_wait_queue(&ep->poll_wait, &w->wait);
	ep_get(ep);

	kunit_release_action(test, ep_test_fput, ep->file);
	KUNIT_EXPECT_EQ(test, w->nr_wakeups, 1);

	if (!list_empty(&w->wait.entry))
		remove_wait_queue(&ep->poll_wait, &w->wait);
	if (ep_put(ep))
		ep_free(ep);
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
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct ep_test_state *s = ep_test_state_alloc(test);
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
	ep_test_check(t, s, "killed wait");
	KUNIT_EXPECT_TRUE(test, s->item[0].on_rdllist);
	KUNIT_EXPECT_EQ(test, s->item[0].ws_active, EP_TEST_WS);
	KUNIT_EXPECT_EQ(test, ep_u32(s->item[0].events),
			ep_u32(ep_test_stored(EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP |
					      EPOLLERR | EPOLLHUP)));

	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ev[0].data, 3);
}

/*
 * A target's ->poll() is asked for the events of the item, not for all:
 * a target may skip the work for the others, and some do (a unix datagram
 * socket looks at its peer's queue only for EPOLLOUT). The target here
 * records what it was asked.
 */
struct ep_proof_keysrc {
	wait_queue_head_t wq;
	__poll_t mask;
	__poll_t key;
};

static __poll_t ep_proof_keysrc_poll(struct file *file, poll_table *pt)
{
	struct ep_proof_keysrc *src = file->private_data;

	src->key = poll_requested_events(pt);
	poll_wait(file, &src->wq, pt);
	return READ_ONCE(src->mask);
}

static const struct file_operations ep_proof_keysrc_fops = {
	.poll	= ep_proof_keysrc_poll,
	.llseek	= noop_llseek,
};

static void eventpoll_poll_key(struct kunit *test)
{
	struct ep_proof_keysrc *src = kunit_kzalloc(test, sizeof(*src),
						    GFP_KERNEL);
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct ep_test *t = test->priv;
	struct file *file;

	KUNIT_ASSERT_NOT_NULL(test, src);
	init_waitqueue_head(&src->wq);
	file = anon_inode_getfile("eventpoll_proof_key", &ep_proof_keysrc_fops,
				  src, O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(file));
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, ep_test_fput,
							file), 0);

	KUNIT_ASSERT_EQ(test, ep_proof_ctl_file(t->ep->file, EPOLL_CTL_ADD, file,
						100, EPOLLIN, 1, false), 0);
	KUNIT_EXPECT_EQ(test, ep_u32(src->key),
			ep_u32(EPOLLIN | EPOLLERR | EPOLLHUP));

	KUNIT_ASSERT_EQ(test, ep_proof_ctl_file(t->ep->file, EPOLL_CTL_MOD, file,
						100, EPOLLOUT | EPOLLET, 2,
						false), 0);
	KUNIT_EXPECT_EQ(test, ep_u32(src->key),
			ep_u32(EPOLLOUT | EPOLLET | EPOLLERR | EPOLLHUP));

	src->key = 0;
	WRITE_ONCE(src->mask, EPOLLOUT);
	wake_up_poll(&src->wq, EPOLLOUT);
	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ep_u32(src->key),
			ep_u32(EPOLLOUT | EPOLLET | EPOLLERR | EPOLLHUP));
}

static struct kunit_case eventpoll_proof_cases[] = {
	KUNIT_CASE_PARAM(eventpoll_exclusive_wakeup, ep_exclusive_gen_params),
	KUNIT_CASE(eventpoll_pollfree),
	KUNIT_CASE(eventpoll_scan_wakes_waiter),
	KUNIT_CASE(eventpoll_ctl_wakes_pollers),
	KUNIT_CASE(eventpoll_deliver_maxevents),
	KUNIT_CASE(eventpoll_random_walk),
	KUNIT_CASE_PARAM(eventpoll_capability_asked, ep_ask_gen_params),
	KUNIT_CASE(eventpoll_add_fast_path),
	KUNIT_CASE(eventpoll_failed_loop_check),
	KUNIT_CASE(eventpoll_first_loop_check),
	KUNIT_CASE(eventpoll_release_wakes_pollers),
	KUNIT_CASE(eventpoll_deliver_fatal_signal),
	KUNIT_CASE(eventpoll_poll_key),
	{}
};

static struct kunit_suite eventpoll_proof_suite = {
	.name = "eventpoll_proof",
	.init = ep_test_init,
	.test_cases = eventpoll_proof_cases,
};

kunit_test_suite(eventpoll_proof_suite);
