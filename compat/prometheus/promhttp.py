"""What compare.py and random_compare.py share: one call to a Prometheus HTTP API."""
import json, urllib.error, urllib.parse, urllib.request


def call(base, path, params, method="POST", raw_max=None):
    """(status, JSON answer) of `path` on `base`; an error's body as JSON, or as text (its first
    `raw_max` characters) under "raw" when it is not JSON."""
    data = urllib.parse.urlencode(params, doseq=True)
    if method == "POST":
        req = urllib.request.Request(base + path, data.encode(), {"Content-Type": "application/x-www-form-urlencoded"})
    else:
        req = urllib.request.Request(base + path + "?" + data)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        body = e.read()
        try:
            return e.code, json.loads(body)
        except Exception:
            return e.code, {"raw": body.decode(errors="replace")[:raw_max]}
