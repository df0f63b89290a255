#!/usr/bin/env python3
"""A stand-in for PromLabs' demo service (the data the PromQL compliance tester's queries
expect): the same metric names and label sets, values that move with time, served on the given
ports (one instance per port). usage: demo_service.py PORT [PORT...]"""
import http.server, math, random, socketserver, sys, threading, time

BUCKETS = [0.0001, 0.00015, 0.0002, 0.0003, 0.0005, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]
PATHS = [("GET", "/api/foo", "200"), ("POST", "/api/foo", "200"), ("GET", "/api/bar", "200"),
         ("POST", "/api/bar", "503"), ("GET", "/api/nonexistent", "404")]


class Instance:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.seed = seed
        self.cpu = {"idle": 0.0, "user": 0.0, "system": 0.0}
        self.hist = {p: [0] * (len(BUCKETS) + 1) for p in PATHS}
        self.sums = {p: 0.0 for p in PATHS}
        self.last_batch = time.time()
        self.lock = threading.Lock()
        threading.Thread(target=self.tick, daemon=True).start()

    def tick(self):
        while True:
            with self.lock:
                self.cpu["idle"] += 3.2 + self.rng.random()
                self.cpu["user"] += 0.5 + self.rng.random() * 0.4
                self.cpu["system"] += 0.2 + self.rng.random() * 0.1
                for p in PATHS:
                    for _ in range(self.rng.randint(0, 6)):
                        d = self.rng.expovariate(1 / 0.004) * (3 if p[2] == "503" else 1)
                        self.sums[p] += d
                        i = next((k for k, b in enumerate(BUCKETS) if d <= b), len(BUCKETS))
                        self.hist[p][i] += 1
                if self.rng.random() < 0.05:
                    self.last_batch = time.time()
            time.sleep(0.25)

    def text(self):
        t = time.time()
        out = []
        with self.lock:
            out.append("# TYPE demo_cpu_usage_seconds_total counter")
            for m, v in self.cpu.items():
                out.append(f'demo_cpu_usage_seconds_total{{mode="{m}"}} {v}')
            out.append("# TYPE demo_memory_usage_bytes gauge")
            base = 1e9 + self.seed * 1e8
            for i, ty in enumerate(["free", "used", "buffers", "cached"]):
                out.append(f'demo_memory_usage_bytes{{type="{ty}"}} {base * (i + 1) + 4e7 * math.sin(t / (30 + 7 * i) + self.seed)}')
            out.append("# TYPE demo_num_cpus gauge")
            out.append(f"demo_num_cpus {4 + self.seed * 2}")
            out.append("# TYPE demo_disk_usage_bytes gauge")
            out.append(f"demo_disk_usage_bytes {1.2e11 + 1e6 * ((t * 3) % 1000)}")
            out.append("# TYPE demo_disk_total_bytes gauge")
            out.append("demo_disk_total_bytes 2.5e11")
            out.append("# TYPE demo_batch_last_success_timestamp_seconds gauge")
            out.append(f"demo_batch_last_success_timestamp_seconds {self.last_batch}")
            if int(t / 10) % 2 == 0:
                out.append("# TYPE demo_intermittent_metric gauge")
                out.append("demo_intermittent_metric 1")
            out.append("# TYPE demo_api_request_duration_seconds histogram")
            for p in PATHS:
                lab = f'method="{p[0]}",path="{p[1]}",status="{p[2]}"'
                acc = 0
                for b, c in zip(BUCKETS, self.hist[p]):
                    acc += c
                    out.append(f'demo_api_request_duration_seconds_bucket{{{lab},le="{b}"}} {acc}')
                acc += self.hist[p][-1]
                out.append(f'demo_api_request_duration_seconds_bucket{{{lab},le="+Inf"}} {acc}')
                out.append(f"demo_api_request_duration_seconds_sum{{{lab}}} {self.sums[p]}")
                out.append(f"demo_api_request_duration_seconds_count{{{lab}}} {acc}")
        return "\n".join(out) + "\n"


def serve(port, inst):
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = inst.text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    socketserver.ThreadingTCPServer.allow_reuse_address = True
    socketserver.ThreadingTCPServer(("127.0.0.1", port), H).serve_forever()


for i, p in enumerate(sys.argv[1:]):
    threading.Thread(target=serve, args=(int(p), Instance(i)), daemon=True).start()
while True:
    time.sleep(3600)
