#include "fd_budget.h"

#include <sys/resource.h>
#include <unistd.h>

long
fd_limit_now(void)
{
    struct rlimit lim;

    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
        return -1;
    return lim.rlim_cur > 0x7fffffff ? 0x7fffffff : (long)lim.rlim_cur;
}

long
fd_margin(long limit)
{
    return limit / 4 > FD_MARGIN_MIN ? limit / 4 : FD_MARGIN_MIN;
}

int
fd_keep_within(int fd, long limit)
{
    if (fd < 0 || limit < 0 || (long)fd + fd_margin(limit) < limit)
        return fd;
    close(fd);
    return -1;
}
