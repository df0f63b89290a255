#!/usr/bin/env python3
"""Compares tsgate's /render with Debian's graphite-web (run in-process) on the same data.

usage: compare.py WORKDIR TSGATE_HTTP_PORT TSGATE_CARBON_PORT [carbon|write|send|imported]

Writes whisper files under WORKDIR/whisper with python3-whisper, sends the same points to tsgate
as carbon plaintext (mode `carbon`, the default; `write` only writes the whisper files and exits,
`imported` neither writes nor sends: tsgate holds them through `tsgate import --from whisper`;
`send` only sends the carbon plaintext to the port given, a real carbon-cache writing the whisper
files, and waits until they hold every point),
waits until tsgate serves them, then evaluates TARGETS with both over one
fixed window and compares the series names, timestamps and values (1e-9 relative, None == null).
"""
import json
import math
import os
import socket
import sys
import time
import urllib.parse
import urllib.request

work, http_port, carbon_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else "carbon"

STEP = 10
N = 60
# Whisper only serves the last 2 h (the archive's retention, measured from now): the points sit
# an hour back, on a 10-minute boundary, so the data and the window are the same on every run
# relative to BASE.
BASE = (int(time.time()) // 600) * 600 - 3600
FROM = BASE - STEP          # exclusive: the first bucket is BASE
UNTIL = BASE + (N - 1) * STEP


def c1(i):
    # a counter with gaps and a reset (derivative, nonNegativeDerivative, perSecond)
    if i in (5, 17, 18):
        return None
    return 100 + 7 * i if i < 30 else 3 * (i - 30) + 0.5


def c2(i):
    # quarters, exactly representable in any float width
    if i in (10, 40, 41, 42):
        return None
    return ((i * 37) % 41 - 20) * 0.25


def xc1(i):
    if i in (0, 59, 25):
        return None
    return (i * 13) % 29 - 10


SERIES = {"a.b.c1": c1, "a.b.c2": c2, "a.x.c1": xc1}

# Every target is evaluated over FROM..UNTIL by both servers. Left out, with the reason (README,
# graphite-web API, "Compared with Debian's graphite-web"):
# - movingAverage(a.b.c2,5) and the other moving* functions: Debian ships 1.1.8, whose window at t
#   is the windowSize points *before* t (t excluded); tsgate follows 1.1.10, whose window ends at
#   and includes t, so every value is shifted by one step. A version difference, not a tsgate bug.
TARGETS = [
    "a.b.c1",
    "a.*.*",
    "sumSeries(a.*.*)",
    "averageSeries(a.b.*)",
    "maxSeries(a.*.*)",
    "minSeries(a.*.*)",
    "diffSeries(a.b.c1,a.b.c2)",
    "divideSeries(a.b.c2,a.x.c1)",
    "asPercent(a.b.*)",
    "asPercent(a.b.c2,a.b.c1)",
    "scale(a.b.c2,1.5)",
    "offset(a.x.c1,-3)",
    "absolute(a.b.c2)",
    "derivative(a.b.c1)",
    "nonNegativeDerivative(a.b.c1)",
    "perSecond(a.b.c1)",
    "integral(a.x.c1)",
    "keepLastValue(a.b.c1)",
    "keepLastValue(a.b.c2,2)",
    "transformNull(a.x.c1,-1)",
    "summarize(a.b.c1,'1min','sum')",
    "summarize(a.b.c2,'1min','avg',true)",
    "summarize(a.x.c1,'2min','max')",
    "hitcount(a.b.c1,'1min')",
    "aliasByNode(a.*.c1,1)",
    "aliasSub(a.b.*,'^a\\.b\\.(.*)$','\\1 x')",
    "groupByNode(a.*.*,2,'sumSeries')",
    "highestMax(a.*.*,2)",
    "sortByName(a.*.*,false,true)",
    "nPercentile(a.b.c2,75)",
    "timeShift(a.b.c1,'1min')",
    "invert(a.x.c1)",
]


def write_whisper():
    import whisper
    for name, f in SERIES.items():
        path = os.path.join(work, "whisper", *name.split(".")) + ".wsp"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        whisper.create(path, [(STEP, 2 * 3600 // STEP)], xFilesFactor=0.0, aggregationMethod="average")
        pts = [(BASE + i * STEP, f(i)) for i in range(N) if f(i) is not None]
        whisper.update_many(path, pts)


def send_carbon():
    lines = []
    for name, f in SERIES.items():
        for i in range(N):
            v = f(i)
            if v is not None:
                lines.append("%s %r %d\n" % (name, v, BASE + i * STEP))
    with socket.create_connection(("127.0.0.1", carbon_port)) as s:
        s.sendall("".join(lines).encode())


def wait_whisper():
    """Waits until carbon-cache's whisper files hold every point sent (it writes them lazily)."""
    import whisper
    want = {n: sum(1 for i in range(N) if f(i) is not None) for n, f in SERIES.items()}
    got = {}
    for _ in range(600):
        for name in SERIES:
            path = os.path.join(work, "whisper", *name.split(".")) + ".wsp"
            try:
                (_, _, _), values = whisper.fetch(path, FROM, UNTIL)
                got[name] = sum(1 for v in values if v is not None)
            except Exception:
                got[name] = -1
        if got == want:
            return
        time.sleep(0.1)
    sys.exit("graphite-web compare: carbon-cache wrote %s of %s points after 60 s" % (got, want))


def tsgate_render(target):
    q = urllib.parse.urlencode({"target": target, "from": FROM, "until": UNTIL, "format": "json"})
    with urllib.request.urlopen("http://127.0.0.1:%d/render?%s" % (http_port, q), timeout=10) as r:
        return json.loads(r.read())


def wait_tsgate():
    want = sum(1 for f in SERIES.values() for i in range(N) if f(i) is not None)
    got = -1
    for _ in range(300):
        try:
            got = sum(1 for s in tsgate_render("a.*.*") for v, _ in s["datapoints"] if v is not None)
        except Exception:
            got = -1
        if got == want:
            return
        time.sleep(0.1)
    sys.exit("graphite-web compare: tsgate shows %d of %d points after 30 s" % (got, want))


def graphite_setup():
    settings = os.path.join(work, "settings")
    os.makedirs(settings, exist_ok=True)
    os.makedirs(os.path.join(work, "log"), exist_ok=True)
    with open(os.path.join(settings, "gcmp_local_settings.py"), "w") as fh:
        fh.write(
            "SECRET_KEY = 'tsgate-compat'\n"
            "STORAGE_DIR = %(w)r\n"
            "WHISPER_DIR = %(w)r + '/whisper'\n"
            "STANDARD_DIRS = [%(w)r + '/whisper']\n"
            "LOG_DIR = %(w)r + '/log'\n"
            "INDEX_FILE = %(w)r + '/index'\n"
            "LOG_ROTATION = False\n"
            "DEFAULT_XFILES_FACTOR = 0\n"
            "TIME_ZONE = 'UTC'\n"
            "FUNCTION_PLUGINS = []\n"
            "DATABASES = {'default': {'NAME': %(w)r + '/graphite.db',"
            " 'ENGINE': 'django.db.backends.sqlite3'}}\n" % {"w": work}
        )
    sys.path.insert(0, settings)
    os.environ["GRAPHITE_SETTINGS_MODULE"] = "gcmp_local_settings"
    os.environ["DJANGO_SETTINGS_MODULE"] = "graphite.settings"
    import django
    django.setup()
    from django.test import Client
    client = Client()

    def render(target):
        r = client.get("/render", {"target": target, "from": FROM, "until": UNTIL, "format": "json"})
        if r.status_code != 200:
            raise RuntimeError("graphite-web %d: %s" % (r.status_code, r.content[:300]))
        return json.loads(r.content)
    return render


def same_value(a, b):
    if a is None or b is None:
        return a is None and b is None
    if a == b:
        return True
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def diff(want, got):
    """The first difference between graphite-web's and tsgate's answers, or None."""
    if [s["target"] for s in want] != [s["target"] for s in got]:
        return "names: graphite-web %s, tsgate %s" % ([s["target"] for s in want], [s["target"] for s in got])
    for w, g in zip(want, got):
        wd, gd = w["datapoints"], g["datapoints"]
        if [t for _, t in wd] != [t for _, t in gd]:
            return "%s: timestamps graphite-web %s..%s (%d), tsgate %s..%s (%d)" % (
                w["target"], wd[0][1] if wd else "-", wd[-1][1] if wd else "-", len(wd),
                gd[0][1] if gd else "-", gd[-1][1] if gd else "-", len(gd))
        for (wv, t), (gv, _) in zip(wd, gd):
            if not same_value(wv, gv):
                return "%s at %d (+%d s): graphite-web %r, tsgate %r" % (w["target"], t, t - BASE, wv, gv)
    return None


def main():
    if mode == "send":
        send_carbon()
        wait_whisper()
        return
    if mode != "imported":
        write_whisper()
    if mode == "write":
        return
    if mode == "carbon":
        send_carbon()
    graphite = graphite_setup()
    wait_tsgate()
    bad = 0
    for t in TARGETS:
        try:
            d = diff(graphite(t), tsgate_render(t))
        except Exception as e:  # an error on either side is a mismatch
            d = "error: %s" % e
        if d:
            bad += 1
            print("MISMATCH %s\n    %s" % (t, d))
        else:
            print("equal    %s" % t)
    print("graphite-web compare: %d/%d targets equal" % (len(TARGETS) - bad, len(TARGETS)))
    print("test result: %s. %d passed; %d failed" % ("ok" if bad == 0 else "FAILED", len(TARGETS) - bad, bad))
    sys.exit(1 if bad else 0)


main()
