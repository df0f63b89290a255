"""Sends carbon pickle frames the way carbon-relay does: pickle.dumps(points, protocol=2)
behind a 4-byte big-endian length. Usage: pickle_sender.py HOST PORT TS
Frames on one connection: good, malicious (GLOBAL os.system), good, protocol 0, bad shapes."""
import pickle, socket, struct, sys

host, port, ts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def frame(payload):
    return struct.pack("!L", len(payload)) + payload


class Evil:
    # Unpickling this with the stock unpickler would run `touch` - tsgate must refuse it.
    def __reduce__(self):
        import os
        return (os.system, ("touch /tmp/tsgate-pickle-pwned",))


s = socket.create_connection((host, port))
s.sendall(frame(pickle.dumps([("pk.carbon.a", (ts, 1.5)), ("pk.carbon.a", (ts + 1, 2)), ("pk.carbon.b", (ts, float("nan")))], protocol=2)))
s.sendall(frame(pickle.dumps([("pk.evil", (ts, 1)), Evil()], protocol=2)))
s.sendall(frame(pickle.dumps([("pk.after", (ts, 3))], protocol=2)))
s.sendall(frame(pickle.dumps([("pk.proto0", (ts, 4)), ["pk.lists", [str(ts), "5.5"]]], protocol=0)))
s.sendall(frame(pickle.dumps([("pk.short", (ts,)), ("pk.tagged;b=2;a=1", (ts, 6))], protocol=4)))
s.close()
