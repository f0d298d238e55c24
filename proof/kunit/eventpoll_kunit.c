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
 * files are exactly those of the EPOLLWAKEUP items. User space sees none
 * of this per item, only the system-wide /sys/power/wakeup_count, hence a
 * test that looks at the lists and the wakeup sources themselves.
 */
#include <kunit/static_stub.h>
#include <kunit/test.h>
#include <linux/cred.h>
#include <linux/mman.h>
#include <linux/pm_wakeup.h>

#define EP_TEST_NR_SRC	4

/* For the assertions, which do not take restricted types */
#define ep_u32(mask)	((__force u32)(mask))

/* A pollable file whose readiness the test sets. */
struct ep_test_src {
	wait_queue_head_t wq;
	__poll_t mask;		/* what ->poll() reports */
	/* Wake the queue from inside the next ->poll(), as another CPU could */
	bool wake_in_poll;
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
	/* Take events as IORING_OP_EPOLL_WAIT does, not as epoll_wait() */
	bool sendevents;
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
 * epoll_ctl() of the test's instance on source @i: do_epoll_ctl() without
 * its two fd lookups. The real syscall would need fds, but a case and its
 * cleanup run in two kthreads that share the file table of all kernel
 * threads; keeping plain file references keeps their lifetime under the
 * control of the test. Not inlined: with KASAN, the event and what
 * do_epoll_ctl_file() keeps on the stack would otherwise count in the
 * frame of every case.
 */
static noinline_for_stack int ep_test_ctl(struct ep_test *t, int op, int i,
					  __poll_t events, u64 data)
{
	struct epoll_event epds = { .events = events, .data = data };
	struct epoll_key tf = { .file = t->src[i].file, .fd = t->src[i].fd };

	return do_epoll_ctl_file(t->ep->file, op, &tf, &epds, false);
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
 * epoll_wait() with a zero timeout, or the epoll_sendevents() of
 * IORING_OP_EPOLL_WAIT, into @uevents; the delivered events are copied to
 * @out.
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

	if (t->sendevents)
		n = epoll_sendevents(t->ep->file, uevents, maxevents);
	else
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

/* The item of source @i, or NULL. ep->mtx is held. */
static struct epitem *ep_test_find(struct ep_test *t, int i)
{
	struct epoll_key key = { .file = t->src[i].file, .fd = t->src[i].fd };

	return ep_find(t->ep, &key);
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
		it->epi = ep_test_find(t, i);
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
	struct ep_test_state *s = ep_test_state_alloc(test);
	bool ready = !!(c->ready & (c->events | EPOLLERR | EPOLLHUP));

	ep_test_set(t, 0, c->ready);
	t->src[0].wake_in_poll = c->wake_in_poll;
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->events, 7), 0);
	ep_test_check(t, s, "add");
	KUNIT_EXPECT_PTR_NE(test, s->item[0].epi, NULL);
	KUNIT_EXPECT_EQ(test, ep_u32(s->item[0].events),
			ep_u32(ep_test_stored(c->events | EPOLLERR | EPOLLHUP)));
	KUNIT_EXPECT_EQ(test, s->item[0].data, 7);
	KUNIT_EXPECT_EQ(test, s->item[0].on_rdllist, ready);
	KUNIT_EXPECT_EQ(test, !!s->item[0].ws,
			!!(ep_test_stored(c->events) & EPOLLWAKEUP));
	KUNIT_EXPECT_EQ(test, s->item[0].ws_active,
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
	struct ep_test_state *s = ep_test_state_alloc(test);

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  c->events | EPOLLWAKEUP, 1), 0);
	ep_test_check(t, s, "add");
	KUNIT_EXPECT_FALSE(test, ep_test_queued(&s->item[0]));

	ep_test_fire(t, 0, c->mask, c->key);
	ep_test_check(t, s, "wakeup");
	KUNIT_EXPECT_EQ(test, s->item[0].on_rdllist, c->queued);
	KUNIT_EXPECT_EQ(test, s->item[0].ws_active, c->queued && EP_TEST_WS);

	/* A second wakeup does not queue the item twice. */
	ep_test_fire(t, 0, c->mask, c->key);
	ep_test_check(t, s, "second wakeup");
	KUNIT_EXPECT_EQ(test, s->nr_rd, c->queued ? 1 : 0);
}

/*
 * Delivery, by epoll_wait() or IORING_OP_EPOLL_WAIT: level-triggered items
 * stay queued, the others are released.
 */

struct ep_deliver_case {
	const char *name;
	__poll_t mode;
	bool sendevents;	/* IORING_OP_EPOLL_WAIT */
	bool queued;		/* still queued after the delivery */
	bool requeued;		/* queued again by the next wakeup */
};

static const struct ep_deliver_case ep_deliver_cases[] = {
	{ "level", 0, false, true, true },
	{ "edge", EPOLLET, false, false, true },
	{ "oneshot", EPOLLONESHOT, false, false, false },
	{ "oneshot_edge", EPOLLONESHOT | EPOLLET, false, false, false },
	{ "level_io_uring", 0, true, true, true },
	{ "edge_io_uring", EPOLLET, true, false, true },
	{ "oneshot_io_uring", EPOLLONESHOT, true, false, false },
};

KUNIT_ARRAY_PARAM_DESC(ep_deliver, ep_deliver_cases, name);

static void eventpoll_deliver_mode(struct kunit *test)
{
	const struct ep_deliver_case *c = test->param_value;
	__poll_t events = EPOLLIN | EPOLLWAKEUP | c->mode;
	struct ep_test *t = test->priv;
	struct epoll_event *ev = ep_test_events_alloc(test);
	unsigned long activations;
	struct ep_test_state *s = ep_test_state_alloc(test);

	t->sendevents = c->sendevents;
	ep_test_set(t, 0, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, events, 42), 0);
	ep_test_check(t, s, "add");
	KUNIT_EXPECT_EQ(test, s->item[0].ws_active, EP_TEST_WS);
	activations = s->ep_ws_activations;

	KUNIT_ASSERT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ep_u32(ev[0].events), ep_u32(EPOLLIN));
	KUNIT_EXPECT_EQ(test, ev[0].data, 42);
	ep_test_check(t, s, "first wait");
	/* ep->ws covered the handover from the item's source to the caller. */
	KUNIT_EXPECT_EQ(test, s->ep_ws_activations, activations + EP_TEST_WS);
	KUNIT_EXPECT_EQ(test, s->item[0].on_rdllist, c->queued);
	KUNIT_EXPECT_EQ(test, s->item[0].ws_active, c->queued && EP_TEST_WS);
	KUNIT_EXPECT_EQ(test, s->has_ep_ws, EP_TEST_WS);
	if (c->mode & EPOLLONESHOT)
		KUNIT_EXPECT_EQ(test, ep_u32(s->item[0].events & ~EP_PRIVATE_BITS),
				0);

	ep_test_fire(t, 0, EPOLLIN, EPOLLIN);
	ep_test_check(t, s, "wakeup");
	KUNIT_EXPECT_EQ(test, s->item[0].on_rdllist, c->requeued);
	/* Not even a wakeup without a key queues a disarmed item. */
	ep_test_fire(t, 0, EPOLLIN, 0);
	ep_test_check(t, s, "wakeup without a key");
	KUNIT_EXPECT_EQ(test, s->item[0].on_rdllist, c->requeued);

	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev),
			c->requeued ? 1 : 0);
	ep_test_check(t, s, "second wait");
	KUNIT_EXPECT_EQ(test, s->item[0].on_rdllist, c->queued);

	if (!(c->mode & EPOLLONESHOT))
		return;

	/* MOD re-arms a oneshot item; it is ready, so it is queued again. */
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_MOD, 0, events, 43), 0);
	ep_test_check(t, s, "rearm");
	KUNIT_EXPECT_TRUE(test, s->item[0].on_rdllist);
	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ev[0].data, 43);
	ep_test_check(t, s, "wait after rearm");
}

/* An item queued by a wakeup but not ready is dropped, and released. */
static void eventpoll_deliver_not_ready(struct kunit *test)
{
	struct ep_test *t = test->priv;
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct ep_test_state *s = ep_test_state_alloc(test);

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  EPOLLIN | EPOLLWAKEUP, 1), 0);
	ep_test_fire(t, 0, 0, 0);
	ep_test_check(t, s, "wakeup");
	KUNIT_EXPECT_EQ(test, s->item[0].ws_active, EP_TEST_WS);

	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 0);
	ep_test_check(t, s, "wait");
	KUNIT_EXPECT_FALSE(test, s->item[0].linked);
	KUNIT_EXPECT_FALSE(test, s->item[0].ws_active);
}

/* Who takes the events: epoll_wait(), or IORING_OP_EPOLL_WAIT */
struct ep_consumer_case {
	const char *name;
	bool sendevents;
};

static const struct ep_consumer_case ep_consumer_cases[] = {
	{ "epoll_wait", false },
	{ "io_uring", true },
};

KUNIT_ARRAY_PARAM_DESC(ep_consumer, ep_consumer_cases, name);

/* A fault on the user buffer keeps the event queued, and the system awake. */
static void eventpoll_deliver_fault(struct kunit *test)
{
	const struct ep_consumer_case *c = test->param_value;
	struct ep_test *t = test->priv;
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct ep_test_state *s = ep_test_state_alloc(test);
	unsigned long ro;

	ro = kunit_vm_mmap(test, NULL, 0, PAGE_SIZE, PROT_READ,
			   MAP_ANONYMOUS | MAP_PRIVATE, 0);
	KUNIT_ASSERT_TRUE(test, ro && !IS_ERR_VALUE(ro));
	t->sendevents = c->sendevents;

	ep_test_set(t, 0, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  EPOLLIN | EPOLLET | EPOLLWAKEUP, 5),
			0);
	KUNIT_EXPECT_EQ(test,
			ep_test_wait_into(t, (struct epoll_event __user *)ro,
					  EP_TEST_NR_SRC, ev),
			-EFAULT);
	ep_test_check(t, s, "faulting wait");
	KUNIT_EXPECT_TRUE(test, s->item[0].on_rdllist);
	KUNIT_EXPECT_EQ(test, s->item[0].ws_active, EP_TEST_WS);

	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ev[0].data, 5);
	ep_test_check(t, s, "wait");
	KUNIT_EXPECT_FALSE(test, s->item[0].on_rdllist);
}

/*
 * A oneshot item whose source wakes up again while the delivery polls it
 * (as another CPU can) is reported once and left disarmed: not queued,
 * its wakeup source released, by epoll_wait() and IORING_OP_EPOLL_WAIT.
 */
static void eventpoll_deliver_oneshot_woken(struct kunit *test)
{
	const struct ep_consumer_case *c = test->param_value;
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct ep_test_state *s = ep_test_state_alloc(test);
	struct ep_test *t = test->priv;

	t->sendevents = c->sendevents;
	ep_test_set(t, 0, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0,
					  EPOLLIN | EPOLLONESHOT | EPOLLWAKEUP, 9),
			0);
	t->src[0].wake_in_poll = true;
	KUNIT_ASSERT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ev[0].data, 9);
	KUNIT_EXPECT_FALSE(test, t->src[0].wake_in_poll);
	ep_test_check(t, s, "wait");
	KUNIT_EXPECT_FALSE(test, ep_test_queued(&s->item[0]));
	KUNIT_EXPECT_FALSE(test, s->item[0].ws_active);
	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 0);
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
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct eventpoll *ep = t->ep;
	struct ep_test_state *s = ep_test_state_alloc(test);
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
	ep_test_check(t, s, "add");

	/* No assertion may abort the case while ep->mtx is held. */
	mutex_lock(&ep->mtx);
	ep_start_scan(ep, &batch);
	t->scan_batch = &batch;
	__ep_test_check(t, s, "scan started");
	KUNIT_EXPECT_TRUE(test, s->scanning);
	KUNIT_EXPECT_TRUE(test, s->item[0].on_batch);
	KUNIT_EXPECT_EQ(test, s->nr_rd, 0);

	/* Not queued yet: goes to the overflow list only. */
	ep_test_fire(t, 1, EPOLLIN, EPOLLIN);
	/* Already in the batch: goes to the overflow list as well. */
	ep_test_fire(t, 0, EPOLLIN, EPOLLIN);
	ep_test_fire(t, 2, EPOLLIN, EPOLLIN);
	/* A second wakeup does not link an item twice. */
	ep_test_fire(t, 1, EPOLLIN, EPOLLIN);
	__ep_test_check(t, s, "wakeups during the scan");
	KUNIT_EXPECT_TRUE(test, s->item[0].on_ovflist);
	KUNIT_EXPECT_TRUE(test, s->item[0].on_batch);
	for (i = 1; i <= 2; i++) {
		KUNIT_EXPECT_TRUE(test, s->item[i].on_ovflist);
		KUNIT_EXPECT_FALSE(test, s->item[i].linked);
		KUNIT_EXPECT_EQ(test, s->item[i].ws_active, EP_TEST_WS);
	}

	ep_done_scan(ep, &batch);
	t->scan_batch = NULL;
	__ep_test_check(t, s, "scan done");
	mutex_unlock(&ep->mtx);
	KUNIT_EXPECT_FALSE(test, s->scanning);
	/* The batch first, then the others in the order they woke up */
	KUNIT_ASSERT_EQ(test, s->nr_rd, 3);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, s->rd_order[i], i);

	/* Nothing was lost: all events are delivered, in that order. */
	n = ep_test_wait(t, EP_TEST_NR_SRC, ev);
	KUNIT_ASSERT_EQ(test, n, 3);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, ev[i].data, 10 + i);
	ep_test_check(t, s, "wait");
	KUNIT_EXPECT_FALSE(test, ep_test_queued(&s->item[2]));
}

/*
 * In the scan the test opened, what ep_send_events() does for the item of
 * source @i: deliver its event, if any, into @*uevents. ep->mtx is held.
 */
static int ep_test_deliver(struct ep_test *t, int i,
			   struct epoll_event __user **uevents)
{
	struct epitem *epi = ep_test_find(t, i);
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
 * wakeup source active: a disarmed item waits for EPOLL_CTL_MOD. The
 * wakeup arrives before the delivery, or from inside the delivery's poll
 * of the item: after the delivery released the wakeup source, before it
 * disarms the item.
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
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct eventpoll *ep = t->ep;
	struct ep_test_state *s = ep_test_state_alloc(test);
	LIST_HEAD(batch);
	int delivered;

	ep_test_set(t, 0, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->events, 9),
			0);
	ep_test_check(t, s, "add");
	KUNIT_ASSERT_TRUE(test, s->item[0].on_rdllist);

	/* No assertion may abort the case while ep->mtx is held. */
	mutex_lock(&ep->mtx);
	ep_start_scan(ep, &batch);
	t->scan_batch = &batch;
	if (c->wake_in_poll) {
		t->src[0].wake_in_poll = true;
	} else {
		ep_test_fire(t, 0, EPOLLIN, EPOLLIN);
		__ep_test_check(t, s, "wakeup during the scan");
		KUNIT_EXPECT_TRUE(test, s->item[0].on_ovflist);
		KUNIT_EXPECT_TRUE(test, s->item[0].on_batch);
	}

	delivered = ep_test_deliver(t, 0, &uevents);
	__ep_test_check(t, s, "delivery");
	KUNIT_EXPECT_EQ(test, delivered, 1);
	KUNIT_EXPECT_FALSE(test, t->src[0].wake_in_poll);
	KUNIT_EXPECT_TRUE(test, s->item[0].on_ovflist);
	KUNIT_EXPECT_FALSE(test, s->item[0].linked);
	KUNIT_EXPECT_EQ(test, ep_u32(s->item[0].events),
			ep_u32(ep_test_stored(c->events) & EP_PRIVATE_BITS));

	ep_test_done_scan(t);
	__ep_test_check(t, s, "scan done");
	mutex_unlock(&ep->mtx);
	KUNIT_EXPECT_FALSE(test, ep_test_queued(&s->item[0]));
	KUNIT_EXPECT_FALSE(test, s->item[0].ws_active);
	KUNIT_EXPECT_EQ(test, s->nr_rd, 0);
	KUNIT_ASSERT_EQ(test, copy_from_user(ev, t->uevents, sizeof(ev[0])), 0);
	KUNIT_EXPECT_EQ(test, ep_u32(ev[0].events), ep_u32(EPOLLIN));
	KUNIT_EXPECT_EQ(test, ev[0].data, 9);

	/* Disarmed: nothing more to report until MOD re-arms it. */
	KUNIT_EXPECT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 0);
	ep_test_check(t, s, "wait");
	KUNIT_EXPECT_FALSE(test, ep_test_queued(&s->item[0]));

	/* MOD re-arms it; still ready, it is queued and reported again. */
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_MOD, 0, c->events, 10),
			0);
	ep_test_check(t, s, "rearm");
	KUNIT_EXPECT_TRUE(test, s->item[0].on_rdllist);
	KUNIT_EXPECT_EQ(test, s->item[0].ws_active,
			!!(ep_test_stored(c->events) & EPOLLWAKEUP));
	KUNIT_ASSERT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	KUNIT_EXPECT_EQ(test, ev[0].data, 10);
	ep_test_check(t, s, "wait after rearm");
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
	struct epoll_event *ev = ep_test_events_alloc(test);
	struct wakeup_source *ws;
	struct ep_test_state *s = ep_test_state_alloc(test);

	ep_test_need_wakeup(test);
	ep_test_set(t, 0, c->ready);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->add, 1), 0);
	if (c->deliver)
		KUNIT_ASSERT_EQ(test, ep_test_wait(t, EP_TEST_NR_SRC, ev), 1);
	ep_test_check(t, s, "add");
	ws = s->item[0].ws;

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_MOD, 0, c->mod, 2), 0);
	ep_test_check(t, s, "mod");
	KUNIT_EXPECT_EQ(test, ep_u32(s->item[0].events),
			ep_u32(c->mod | EPOLLERR | EPOLLHUP));
	KUNIT_EXPECT_EQ(test, s->item[0].data, 2);
	KUNIT_EXPECT_EQ(test, s->item[0].on_rdllist, c->queued);
	KUNIT_EXPECT_EQ(test, s->nr_named_ws, c->mod & EPOLLWAKEUP ? 1 : 0);
	if (c->add & c->mod & EPOLLWAKEUP)
		KUNIT_EXPECT_PTR_EQ(test, s->item[0].ws, ws);
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
	struct ep_test_state *s = ep_test_state_alloc(test);

	ep_test_set(t, 0, c->ready);
	ep_test_set(t, 1, EPOLLIN);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->events, 1), 0);
	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 1,
					  EPOLLIN | EPOLLWAKEUP, 2), 0);
	ep_test_check(t, s, "add");
	KUNIT_EXPECT_EQ(test, s->nr_rd, c->ready ? 2 : 1);

	KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_DEL, 0, 0, 0), 0);
	ep_test_check(t, s, "del");
	KUNIT_EXPECT_PTR_EQ(test, s->item[0].epi, NULL);
	KUNIT_EXPECT_EQ(test, s->nr_rd, 1);
	KUNIT_EXPECT_EQ(test, s->nr_named_ws, EP_TEST_WS);
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
	struct ep_test_state *s = ep_test_state_alloc(test);
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
		ep_test_check(t, s, "add");
		KUNIT_EXPECT_EQ(test, !!s->item[0].ws, !c->cap && EP_TEST_WS);
	}

	if (c->cap) {
		error = ep_test_ctl(t, c->op, 0, events, 2);
	} else {
		error = ep_test_ctl_nocap(t, c->op, 0, events, 2,
					  &capable_seen);
		KUNIT_EXPECT_FALSE(test, capable_seen);
	}
	KUNIT_EXPECT_EQ(test, error, 0);
	ep_test_check(t, s, c->name);
	KUNIT_EXPECT_EQ(test, s->item[0].data, 2);
	KUNIT_EXPECT_EQ(test, !!(s->item[0].events & EPOLLWAKEUP), kept);
	KUNIT_EXPECT_EQ(test, !!s->item[0].ws, kept);
	KUNIT_EXPECT_EQ(test, s->nr_named_ws, kept ? 1 : 0);
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
	struct ep_test_state *before = ep_test_state_alloc(test);
	struct ep_test_state *s = ep_test_state_alloc(test);
	const struct ep_test_item *it = &s->item[0];
	int error;

	ep_test_need_wakeup(test);
	ep_test_set(t, 0, EPOLLIN);
	if (c->op == EPOLL_CTL_MOD)
		KUNIT_ASSERT_EQ(test, ep_test_ctl(t, EPOLL_CTL_ADD, 0, c->add, 1),
				0);
	ep_test_check(t, before, "before");

	kunit_activate_static_stub(test, ep_create_wakeup_source,
				   ep_test_create_wakeup_source_fail);
	error = ep_test_ctl(t, c->op, 0, c->events, 2);
	kunit_deactivate_static_stub(test, ep_create_wakeup_source);
	KUNIT_EXPECT_EQ(test, error, c->error);
	KUNIT_EXPECT_EQ(test, t->nr_failed_allocs, c->allocs);

	ep_test_check(t, s, c->name);
	if (c->error) {
		/* Nothing changed. */
		KUNIT_EXPECT_PTR_EQ(test, it->epi, before->item[0].epi);
		KUNIT_EXPECT_EQ(test, ep_u32(it->events),
				ep_u32(before->item[0].events));
		KUNIT_EXPECT_EQ(test, it->data, before->item[0].data);
		KUNIT_EXPECT_PTR_EQ(test, it->ws, before->item[0].ws);
		KUNIT_EXPECT_EQ(test, it->on_rdllist, before->item[0].on_rdllist);
		KUNIT_EXPECT_EQ(test, s->nr_named_ws, before->nr_named_ws);
		return;
	}
	KUNIT_EXPECT_EQ(test, ep_u32(it->events),
			ep_u32(c->events | EPOLLERR | EPOLLHUP));
	KUNIT_EXPECT_EQ(test, it->data, 2);
	if (c->events & EPOLLWAKEUP)
		KUNIT_EXPECT_PTR_EQ(test, it->ws, before->item[0].ws);
	else
		KUNIT_EXPECT_PTR_EQ(test, it->ws, NULL);
	KUNIT_EXPECT_TRUE(test, it->on_rdllist);
}

/*
 * EPOLL_CTL_DISABLE disarms an armed oneshot item, and only that: an
 * item it disarms is off the ready list with its wakeup source released,
 * and a bystander queued ahead of it stays where it is.
 */

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

static struct kunit_case eventpoll_test_cases[] = {
	KUNIT_CASE_PARAM(eventpoll_insert_ready, ep_insert_gen_params),
	KUNIT_CASE_PARAM(eventpoll_callback_queue, ep_callback_gen_params),
	KUNIT_CASE_PARAM(eventpoll_deliver_mode, ep_deliver_gen_params),
	KUNIT_CASE(eventpoll_deliver_not_ready),
	KUNIT_CASE_PARAM(eventpoll_deliver_fault, ep_consumer_gen_params),
	KUNIT_CASE_PARAM(eventpoll_deliver_oneshot_woken,
			 ep_consumer_gen_params),
	KUNIT_CASE(eventpoll_scan_overflow),
	KUNIT_CASE_PARAM(eventpoll_scan_deliver_oneshot,
			 ep_scan_deliver_gen_params),
	KUNIT_CASE_PARAM(eventpoll_modify_wakeup, ep_modify_gen_params),
	KUNIT_CASE_PARAM(eventpoll_remove_item, ep_remove_gen_params),
	KUNIT_CASE_PARAM(eventpoll_wakeup_capability, ep_cap_gen_params),
	KUNIT_CASE_PARAM(eventpoll_wakeup_alloc_failure, ep_alloc_gen_params),
	KUNIT_CASE_PARAM(eventpoll_disable_item, ep_disable_gen_params),
	{}
};

static struct kunit_suite eventpoll_test_suite = {
	.name = "eventpoll",
	.init = ep_test_init,
	.test_cases = eventpoll_test_cases,
};

kunit_test_suite(eventpoll_test_suite);

#include "eventpoll_proof_kunit.c"
