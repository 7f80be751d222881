// Linux interfaces Swift's Glibc module leaves out: epoll and eventfd, for
// the HTTP server's event loop (Sources/Net/HTTPServer+Loop.swift); timerfd
// and route netlink, for `brsync watch` (Client/brsync-sync/Watch.swift) to
// hear of a resume from suspend and of network changes.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
