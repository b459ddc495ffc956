"""A headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe).

Standard library only: the protocol is JSON messages separated by NUL bytes on file descriptors 3
(commands to the browser) and 4 (answers and events). The network is cut twice over: the page's
requests are emulated offline, and the browser's own proxy and host resolver point nowhere.
"""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser():
    """Path of an installed Chromium, or None."""
    for name in BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    """One browser process with one page attached; use as a context manager."""

    def __init__(self, executable, width=1400, height=900, timeout_s=60.0):
        self.width, self.height, self.timeout_s = width, height, timeout_s
        self._profile = tempfile.mkdtemp(prefix="projector-chromium-")
        cmd_read, cmd_write = os.pipe()
        evt_read, evt_write = os.pipe()

        def wire_pipes():  # runs in the child before exec: the protocol's fds 3 and 4
            # Copies first: a pipe end may itself be fd 3 or 4, and dup2 onto itself would leave
            # it close-on-exec.
            read_copy, write_copy = os.dup(cmd_read), os.dup(evt_write)
            os.dup2(read_copy, 3)
            os.dup2(write_copy, 4)

        args = [
            executable, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-quic",
            "--disable-extensions", "--mute-audio", "--hide-scrollbars", "--disable-dev-shm-usage",
            "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
            f"--user-data-dir={self._profile}", f"--window-size={width},{height}", "about:blank",
        ]
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._stderr, preexec_fn=wire_pipes, close_fds=False)
        os.close(cmd_read)
        os.close(evt_write)
        self._out, self._in = cmd_write, evt_read
        self._buf = b""
        self._next_id = 0
        self.events = []
        self.session = None
        self._attach()

    # ------------------------------------------------------------------ protocol plumbing
    def _send(self, method, params=None, session=True):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        return self._next_id

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for the browser")
            ready, _, _ = select.select([self._in], [], [], left)
            if ready:
                chunk = os.read(self._in, 1 << 20)
                if not chunk:
                    raise BrowserError("the browser closed the pipe: " + self.stderr_tail())
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=True, timeout_s=None):
        """Sends a command and returns its result; events seen meanwhile go to self.events."""
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        while True:
            msg = self._read_message(deadline)
            if msg.get("id") == wanted:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method, timeout_s=None):
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        for i, e in enumerate(self.events):
            if e["method"] == method:
                return self.events.pop(i)
        while True:
            msg = self._read_message(deadline)
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self.events.append(msg)

    def _attach(self):
        targets = self.call("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": page["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(domain + ".enable")
        self.call("Network.emulateNetworkConditions",
                  {"offline": True, "latency": 0, "downloadThroughput": -1,
                   "uploadThroughput": -1})
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False})

    # ------------------------------------------------------------------ page operations
    def open(self, path):
        """Navigates to a local file and waits for its load event; returns seconds taken."""
        self.events.clear()
        start = time.monotonic()
        self.call("Page.navigate", {"url": "file://" + os.path.abspath(path)})
        self.wait_event("Page.loadEventFired")
        return time.monotonic() - start

    def evaluate(self, expression, await_promise=True, timeout_s=None):
        result = self.call("Runtime.evaluate",
                           {"expression": expression, "awaitPromise": await_promise,
                            "returnByValue": True}, timeout_s=timeout_s)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self):
        """Console errors and warnings, uncaught exceptions, log errors and network requests."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                out.append("exception: " + d.get("exception", {}).get("description", d["text"]))
            elif m == "Runtime.consoleAPICalled" and p["type"] in ("error", "warning", "assert"):
                out.append(f"console.{p['type']}: " +
                           " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
            elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(f"log {p['entry']['level']}: {p['entry']['text']}")
            elif m == "Network.requestWillBeSent":
                url = p["request"]["url"]
                if not url.startswith(("file:", "data:", "blob:", "about:")):
                    out.append("network request: " + url)
        return out

    def screenshot(self, path, max_height=None):
        """Full-page PNG (the top `max_height` CSS pixels when given)."""
        metrics = self.call("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        height = int(min(size["height"], max_height or 16000))
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": height, "deviceScaleFactor": 1,
                   "mobile": False})
        params = {"format": "png", "captureBeyondViewport": True}
        if max_height:
            params["clip"] = {"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1}
        data = self.call("Page.captureScreenshot", params)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data["data"]))
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False})

    def stderr_tail(self):
        self._stderr.seek(0)
        return self._stderr.read()[-2000:].decode(errors="replace")

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout_s=5)
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stderr.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
