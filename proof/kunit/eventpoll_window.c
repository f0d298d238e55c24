// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The local proof layer's race window for the eventpoll tests: a kprobe
 * that holds a task at a kernel function for a while, so that a race the
 * proof layer's tests aim at happens on every run, not once in a million.
 * Never posted upstream.
 *
 * /sys/kernel/debug/eventpoll_window/probe takes "SYMBOL[+OFFSET] COMM MS":
 * a task whose comm is COMM reaching SYMBOL+OFFSET spins there for MS
 * milliseconds (a kprobe handler may not sleep, and the probed code may
 * hold a spinlock); an empty line removes the probe. Reading
 * /sys/kernel/debug/eventpoll_window/count gives "ENTERED LEFT": how many
 * times such a task entered the window and left it since the probe was
 * set, so that a test knows when to start the other side of its race.
 */
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/init.h>
#include <linux/kprobes.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#define EP_WINDOW_MAX_MS	10000

static DEFINE_MUTEX(ep_window_mutex);
static struct kprobe ep_window_kp;
static bool ep_window_set;
static char ep_window_symbol[KSYM_NAME_LEN];
static char ep_window_comm[TASK_COMM_LEN];
static unsigned int ep_window_ms;
static atomic_t ep_window_entered, ep_window_left;

static int ep_window_pre(struct kprobe *kp, struct pt_regs *regs)
{
	if (strncmp(current->comm, ep_window_comm, TASK_COMM_LEN))
		return 0;
	atomic_inc(&ep_window_entered);
	mdelay(ep_window_ms);
	atomic_inc(&ep_window_left);
	return 0;
}

/* Under ep_window_mutex. */
static void ep_window_clear(void)
{
	if (ep_window_set)
		unregister_kprobe(&ep_window_kp);
	ep_window_set = false;
}

/* "SYMBOL[+OFFSET] COMM MS", under ep_window_mutex. */
static int ep_window_arm(char *line)
{
	char *symbol, *comm, *ms, *plus;
	unsigned int offset = 0, delay;
	int error;

	symbol = strsep(&line, " ");
	comm = strsep(&line, " ");
	ms = strsep(&line, " ");
	if (!symbol || !comm || !ms || line || !*symbol || !*comm ||
	    strlen(symbol) >= KSYM_NAME_LEN || strlen(comm) >= TASK_COMM_LEN)
		return -EINVAL;
	plus = strchr(symbol, '+');
	if (plus) {
		*plus = '\0';
		error = kstrtouint(plus + 1, 0, &offset);
		if (error)
			return error;
	}
	error = kstrtouint(ms, 10, &delay);
	if (error)
		return error;
	if (delay > EP_WINDOW_MAX_MS)
		return -ERANGE;

	strscpy(ep_window_symbol, symbol);
	strscpy(ep_window_comm, comm);
	ep_window_ms = delay;
	atomic_set(&ep_window_entered, 0);
	atomic_set(&ep_window_left, 0);
	memset(&ep_window_kp, 0, sizeof(ep_window_kp));
	ep_window_kp.symbol_name = ep_window_symbol;
	ep_window_kp.offset = offset;
	ep_window_kp.pre_handler = ep_window_pre;
	error = register_kprobe(&ep_window_kp);
	if (error)
		return error;
	ep_window_set = true;
	return 0;
}

static ssize_t ep_window_probe_write(struct file *file, const char __user *buf,
				     size_t count, loff_t *ppos)
{
	char line[KSYM_NAME_LEN + TASK_COMM_LEN + 16];
	int error = 0;

	if (count >= sizeof(line))
		return -EINVAL;
	if (copy_from_user(line, buf, count))
		return -EFAULT;
	line[count] = '\0';
	strim(line);

	mutex_lock(&ep_window_mutex);
	ep_window_clear();
	if (*line)
		error = ep_window_arm(line);
	mutex_unlock(&ep_window_mutex);
	return error ? error : count;
}

static const struct file_operations ep_window_probe_fops = {
	.write = ep_window_probe_write,
	.llseek = noop_llseek,
};

static ssize_t ep_window_count_read(struct file *file, char __user *buf,
				    size_t count, loff_t *ppos)
{
	char line[32];
	int len;

	len = scnprintf(line, sizeof(line), "%d %d\n",
			atomic_read(&ep_window_entered),
			atomic_read(&ep_window_left));
	return simple_read_from_buffer(buf, count, ppos, line, len);
}

static const struct file_operations ep_window_count_fops = {
	.read = ep_window_count_read,
	.llseek = default_llseek,
};

static int __init ep_window_init(void)
{
	struct dentry *dir = debugfs_create_dir("eventpoll_window", NULL);

	debugfs_create_file("probe", 0200, dir, NULL, &ep_window_probe_fops);
	debugfs_create_file("count", 0444, dir, NULL, &ep_window_count_fops);
	return 0;
}
late_initcall(ep_window_init);
