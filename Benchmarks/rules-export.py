#!/usr/bin/env python3
"""Prints an export (`brsync import` reads it) of COUNT rules for firefox:
hosts host0.example0.com/path0/* … spread over 50 domains and 7 paths, with
priorities 0-4, the replica the listing and settings benchmarks measure.
Usage: python3 Benchmarks/rules-export.py COUNT"""
import json
import sys

count = int(sys.argv[1])
rules = [{"browser": "firefox", "createdAt": "2026-01-01T00:00:00.000Z", "priority": i % 5,
          "pattern": f"host{i}.example{i % 50}.com/path{i % 7}/*"} for i in range(count)]
json.dump({"format": "brsync-export", "version": 1, "settings": {}, "rules": rules,
           "browsers": [{"id": "firefox", "name": "Firefox", "enabled": True}]}, sys.stdout)
