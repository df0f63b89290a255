#!/usr/bin/env python3
"""A scrape target whose `compat_intermittent` series exists only every other 5 s: Prometheus
writes a staleness marker each time it vanishes. usage: intermittent.py PORT"""
import http.server, sys, time


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        t = time.time()
        body = "# TYPE compat_counter_total counter\ncompat_counter_total %d\n" % int(t * 10)
        if int(t // 5) % 2 == 0:
            body += "# TYPE compat_intermittent gauge\ncompat_intermittent{kind=\"a\"} %d\n" % (int(t) % 7)
        b = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
