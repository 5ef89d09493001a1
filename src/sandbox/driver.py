# The kernel driver: runs inside the sandbox as the box's only long-lived process.
# Requests and replies are frames on two pipes: a 4-byte big-endian length, then UTF-8 JSON.
# User code runs in one persistent namespace; its output is captured with caps, and open
# matplotlib figures are returned as PNG after each run.
import ast, base64, io, json, os, signal, struct, sys, traceback

REQ = os.dup(0)
REP = os.dup(1)
# fd-level output (subprocesses, C libraries) goes to a file in /tmp, read back after each run
_null = os.open('/dev/null', os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
_capture = os.open('/tmp/.fd-output', os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.dup2(_capture, 1)
os.dup2(_capture, 2)
os.close(_capture)
# inherited descriptors are closed before any user code runs: only the two channel pipes stay
for _name in os.listdir('/proc/self/fd'):
    _fd = int(_name)
    if _fd > 2 and _fd not in (REQ, REP):
        try:
            os.close(_fd)
        except OSError:
            pass

LIMITS = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
sys.argv = ['']
MAX_LOG_BYTES = int(LIMITS.get('max_log_bytes', 1 << 20))
MAX_LINE_CHARS = int(LIMITS.get('max_line_chars', 16384))
MAX_IMAGES = int(LIMITS.get('max_images', 8))
MAX_IMAGE_BYTES = int(LIMITS.get('max_image_bytes', 4 << 20))
MAX_REQUEST_BYTES = 16 << 20


class Collector:
    """One run's logs: stdout and stderr interleaved, capped per line and per run."""

    def __init__(self):
        self.parts = []
        self.size = 0
        self.dropped = 0
        self.line = 0
        self.cut = 0

    def add(self, text):
        out = []
        for piece in text.splitlines(keepends=True):
            ends = piece.endswith('\n')
            body = piece[:-1] if ends else piece
            room = MAX_LINE_CHARS - self.line
            if len(body) > room:
                self.cut += len(body) - max(room, 0)
                body = body[:max(room, 0)]
            self.line += len(body)
            out.append(body)
            if ends:
                if self.cut:
                    out.append('…[%d characters of this line cut]' % self.cut)
                    self.cut = 0
                out.append('\n')
                self.line = 0
        data = ''.join(out)
        encoded = len(data.encode('utf-8', 'replace'))
        if self.size + encoded > MAX_LOG_BYTES:
            room = MAX_LOG_BYTES - self.size
            kept = data.encode('utf-8', 'replace')[:max(room, 0)].decode('utf-8', 'ignore')
            self.dropped += encoded - len(kept.encode('utf-8'))
            data = kept
            encoded = len(kept.encode('utf-8'))
        if data:
            self.parts.append(data)
            self.size += encoded

    def text(self):
        if self.cut:
            self.parts.append('…[%d characters of this line cut]' % self.cut)
            self.cut = 0
        if self.dropped:
            self.parts.append('\n…[%d bytes of output dropped: the %d-byte limit was reached]\n' % (self.dropped, MAX_LOG_BYTES))
        return ''.join(self.parts)


class CappedStream(io.TextIOBase):
    def __init__(self, collector, name):
        self.collector = collector
        self.name = name

    def writable(self):
        return True

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError('write() argument must be str, not %s' % type(text).__name__)
        self.collector.add(text)
        return len(text)

    def isatty(self):
        return False


class RunTimeout(BaseException):
    """Raised in user code when the soft timeout fires (BaseException: plain `except Exception` does not swallow it)."""


def _on_alarm(signum, frame):
    raise RunTimeout()


def read_exact(n):
    chunks = []
    while n > 0:
        chunk = os.read(REQ, min(n, 1 << 20))
        if not chunk:
            raise EOFError()
        chunks.append(chunk)
        n -= len(chunk)
    return b''.join(chunks)


def read_request():
    (length,) = struct.unpack('>I', read_exact(4))
    if length > MAX_REQUEST_BYTES:
        raise EOFError()
    return json.loads(read_exact(length).decode('utf-8'))


def send(reply):
    data = json.dumps(reply, ensure_ascii=False).encode('utf-8', 'replace')
    frame = struct.pack('>I', len(data)) + data
    view = memoryview(frame)
    while view:
        view = view[os.write(REP, view):]


def drain_fd_output(collector):
    try:
        os.lseek(1, 0, os.SEEK_SET)
        data = os.read(1, MAX_LOG_BYTES + 1)
        os.ftruncate(1, 0)
        os.lseek(1, 0, os.SEEK_SET)
    except OSError:
        return
    if data:
        collector.add(data.decode('utf-8', 'replace'))


def collect_figures():
    images = []
    plt = sys.modules.get('matplotlib.pyplot')
    if plt is None:
        return images, 0
    skipped = 0
    try:
        for number in plt.get_fignums():
            if len(images) >= MAX_IMAGES:
                skipped += 1
                continue
            buffer = io.BytesIO()
            plt.figure(number).savefig(buffer, format='png')
            png = buffer.getvalue()
            if len(png) > MAX_IMAGE_BYTES:
                skipped += 1
                continue
            images.append(base64.b64encode(png).decode('ascii'))
    finally:
        plt.close('all')
    return images, skipped


namespace = {'__name__': '__main__', '__builtins__': __builtins__}


def run(code, timeout):
    collector = Collector()
    sys.stdout = CappedStream(collector, '<stdout>')
    sys.stderr = CappedStream(collector, '<stderr>')
    status = 'ok'
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, max(timeout, 0.001))
        try:
            tree = ast.parse(code, '<cell>', 'exec')
            # like a notebook cell: the value of a final expression is shown
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, '<cell>', 'exec'), namespace)
            if last is not None:
                value = eval(compile(last, '<cell>', 'eval'), namespace)
                if value is not None:
                    print(repr(value))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except RunTimeout:
        status = 'timeout'
        collector.add('\nTimeoutError: the code ran longer than %g s and was interrupted (variables defined so far are kept)\n' % timeout)
    except KeyboardInterrupt:
        status = 'error'
        collector.add('\nKeyboardInterrupt\n')
    except SystemExit as stop:
        collector.add('\nSystemExit: %s (the kernel keeps running)\n' % (stop.code,))
    except BaseException:
        status = 'error'
        kind, value, tb = sys.exc_info()
        # drop the driver's own frame: the model sees its cell only
        collector.add(''.join(traceback.format_exception(kind, value, tb.tb_next if tb is not None else None)))
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    images, skipped = collect_figures_safely(collector)
    drain_fd_output(collector)
    if skipped:
        collector.add('\n[%d figure(s) not returned: at most %d images of %d bytes each]\n' % (skipped, MAX_IMAGES, MAX_IMAGE_BYTES))
    return {'status': status, 'logs': collector.text(), 'images': images, 'dropped_bytes': collector.dropped}


def collect_figures_safely(collector):
    try:
        return collect_figures()
    except BaseException as err:
        collector.add('\n[figures could not be rendered: %s]\n' % (err,))
        return [], 0


def main():
    # preloaded once per box: the first cell does not pay for these imports
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    send({'ready': True})
    while True:
        try:
            request = read_request()
        except EOFError:
            return
        if request.get('op') == 'exec':
            send(run(str(request.get('code', '')), float(request.get('timeout', 30))))
        else:
            send({'pong': True})


main()
