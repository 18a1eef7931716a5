#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# monitor --listen against hostile clients: only /metrics and / served,
# loopback by default, oversized requests refused (431), slow-loris clients
# cut at the request timeout (408), connections over the bound refused (503),
# and a well-behaved scrape still answered while the slow ones hang on.
source "$TEST_LIB"
command -v python3 >/dev/null || skip "python3 not found"

# Port alone = 127.0.0.1; port 0 = any free port (printed on stderr).
"$SHOOTDOWN" monitor 1s --trace off --listen 0 >"$TMP/mon.out" 2>"$TMP/mon.err" &
mon=$!
stop_monitor() { kill -TERM "$mon" 2>/dev/null; wait "$mon" 2>/dev/null; }
trap 'stop_monitor; rm -rf "$TMP"' EXIT
port=
for _ in $(seq 100); do
  port=$(sed -n 's|.*serving http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$TMP/mon.err")
  [[ -n $port ]] && break
  sleep 0.1
done
if [[ -z $port ]]; then not_ok "monitor did not start serving: $(cat "$TMP/mon.err")"; finish; fi
ok "serving on 127.0.0.1:$port"

# Loopback only: the listening socket's local address is 127.0.0.1.
hexport=$(printf '%04X' "$port")
if grep -q " 0100007F:$hexport 00000000:0000 0A" /proc/net/tcp; then ok "listens on 127.0.0.1 only"; else not_ok "not bound to 127.0.0.1:$port"; fi

PORT=$port python3 - <<'PY'
import os, socket, time, threading
port = int(os.environ["PORT"])
n = 0
failed = 0
def check(cond, what):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok"), "py", n, "-", what, flush=True)
    if not cond: failed += 1

def request(raw, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(raw)
    except OSError:
        pass
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b: break
            data += b
    except OSError:
        pass
    s.close()
    return data

def status(data):
    try: return int(data.split(b" ", 2)[1])
    except Exception: return 0

r = request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
check(status(r) == 200 and b"shootdown_" in r, "GET /metrics: 200 with metrics")
r = request(b"GET / HTTP/1.1\r\n\r\n")
check(status(r) == 200 and b'href="/metrics"' in r, "GET /: a link to /metrics")
check(status(request(b"GET /etc/passwd HTTP/1.1\r\n\r\n")) == 404, "other paths: 404")
check(status(request(b"POST /metrics HTTP/1.1\r\nContent-Length: 1\r\n\r\nx")) == 405, "POST: 405")
check(status(request(b"\x16\x03\x01garbage\r\n\r\n")) == 400, "not HTTP: 400")
t0 = time.monotonic()
r = request(b"GET /metrics HTTP/1.1\r\n" + b"X-Big: " + b"a" * 200000 + b"\r\n\r\n")
check(status(r) == 431, "oversized request: 431 (got %d)" % status(r))
check(time.monotonic() - t0 < 4, "oversized request refused at once")

# Slow loris: 8 clients dribble a header byte every 0.5 s and never finish.
results = []
def loris():
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(b"GET /metrics HTTP/1.1\r\n")
    t = time.monotonic()
    data = b""
    try:
        while time.monotonic() - t < 15:
            try:
                s.sendall(b"X")
            except OSError:
                break
            s.settimeout(0.5)
            try:
                b = s.recv(4096)
                if not b: break
                data += b
            except socket.timeout:
                pass
    except OSError:
        pass
    results.append((time.monotonic() - t, status(data)))
    s.close()
threads = [threading.Thread(target=loris) for _ in range(8)]
for t in threads: t.start()
time.sleep(1)
t0 = time.monotonic()
r = request(b"GET /metrics HTTP/1.1\r\n\r\n", timeout=5)
check(status(r) == 200 and time.monotonic() - t0 < 3, "a scrape is served while slow clients hang on")
for t in threads: t.join()
check(len(results) == 8 and all(d < 10 for d, _ in results), "slow clients cut within the timeout: %s" % [round(d, 1) for d, _ in results])
check(all(st == 408 for _, st in results), "slow clients told 408")

# Too many connections at once: the ones over the bound get 503 at once.
socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(24)]
time.sleep(0.5)
refused = 0
for s in socks:
    s.settimeout(0.2)
    try:
        b = s.recv(4096)
        if status(b) == 503: refused += 1
    except OSError:
        pass
check(refused >= 8, "connections over the bound of 16 refused with 503 (%d of 24)" % refused)
for s in socks: s.close()
time.sleep(0.3)
check(status(request(b"GET /metrics HTTP/1.1\r\n\r\n")) == 200, "still serving afterwards")
raise SystemExit(1 if failed else 0)
PY
if [[ $? == 0 ]]; then ok "hostile clients handled"; else not_ok "hostile clients"; fi

t0=$SECONDS
kill -TERM "$mon"; wait "$mon"; rc=$?
if [[ $rc == 0 && $((SECONDS - t0)) -lt 5 ]]; then ok "monitor stops on SIGTERM (rc 0)"; else not_ok "monitor stop: rc=$rc after $((SECONDS - t0))s"; fi
trap 'rm -rf "$TMP"' EXIT
finish
