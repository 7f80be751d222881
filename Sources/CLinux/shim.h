// Linux interfaces Swift's Glibc module leaves out: epoll and eventfd, for
// the HTTP server's event loop (Sources/Net/HTTPServer+Loop.swift).
#include <sys/epoll.h>
#include <sys/eventfd.h>
