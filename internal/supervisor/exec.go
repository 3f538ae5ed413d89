package supervisor

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/narad/narad/internal/chans"
	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/textenc"
)

// outputDrain bounds how long a command's output is read after its process group is
// gone; only a process that escaped the group (setsid) could hold a pipe open longer.
const outputDrain = time.Second

// pipeAtomic is the most a pipe is sure to hold with no reader yet: Linux shrinks a
// pipe to one page when a user has many.
const pipeAtomic = 4096

// command is a new exec.Cmd for the command. Its path was looked up once in New when
// that worked; otherwise each start looks again, and fails with why.
func (s *Supervisor) command() *exec.Cmd {
	if s.path == "" {
		return exec.Command(s.o.Command[0], s.o.Command[1:]...)
	}
	return &exec.Cmd{Path: s.path, Args: s.o.Command}
}

// child is one started command.
type child struct {
	cmd    *exec.Cmd
	pgid   int
	exited chan struct{} // closed once it exited and its group was killed
	done   chan struct{} // closed once it exited, its group is gone and its output is read
	tail   tail          // the end of its stderr
	// outRead and outPassed count its stdout bytes: read from its pipe, and passed
	// on (or dropped after a write failed). Their difference is in the pump's hands.
	outRead, outPassed atomic.Int64

	mu     sync.Mutex
	outErr error // the first write of its stdout that failed
}

// writeError is the first failed write of the command's output, nil when all of it
// was written (so far: read it once done is closed to know for sure).
func (c *child) writeError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outErr
}

// start runs the command for m with stdin as its standard input, in a process group
// of its own so that stopping it reaches whatever it started.
func (s *Supervisor) start(m *client.Message, stdin []byte) (*child, error) {
	p, err := openStdio()
	if err != nil {
		return nil, err
	}
	cmd := s.command()
	cmd.Env = s.envFor(m, s.runs.next(keyOf(m)))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.inR, p.outW, p.errW
	cmd.SysProcAttr = groupAttr()
	// Input that fits in an empty pipe is written before the start, so it needs no
	// goroutine of its own; the read end is open, so the write cannot fail for want
	// of a reader.
	early := len(stdin) <= pipeAtomic
	if early {
		_, _ = p.inW.Write(stdin)
		_ = p.inW.Close()
	}
	err = cmd.Start()
	// The child has its own copies; ours would keep the pipes open forever.
	closeAll(p.inR, p.outW, p.errW)
	if err != nil {
		closeAll(p.inW, p.outR, p.errR)
		s.runs.undo(keyOf(m)) // not a run: the next start is still its first
		return nil, err
	}
	c := &child{cmd: cmd, pgid: cmd.Process.Pid, exited: make(chan struct{}), done: make(chan struct{})}
	pumps := s.pumpOutput(c, m, p)
	if !early {
		go func() {
			// A command that does not read its input gets EPIPE here, which is its right.
			_, _ = p.inW.Write(stdin)
			_ = p.inW.Close()
		}()
	}
	go c.reap(p, pumps, s.drainClock)
	return c, nil
}

// stdio are a command's three pipes, both ends of each: ours (inW, outR, errR) and
// the child's.
type stdio struct{ inR, inW, outR, outW, errR, errW *os.File }

// openStdio opens a command's pipes. Our own pipes rather than exec's copying
// goroutines: Wait then returns when the process exits, not when every process
// holding its output has exited too.
func openStdio() (*stdio, error) {
	var p stdio
	var err error
	if p.inW, p.inR, err = childPipe(true); err != nil {
		return nil, err
	}
	if p.outR, p.outW, err = childPipe(false); err != nil {
		closeAll(p.inR, p.inW)
		return nil, err
	}
	if p.errR, p.errW, err = childPipe(false); err != nil {
		closeAll(p.inR, p.inW, p.outR, p.outW)
		return nil, err
	}
	return &p, nil
}

// pumpOutput passes c's stdout and stderr on, whole lines at a time, and keeps the
// tail of its stderr when that is wanted; the returned group is done once both ended.
func (s *Supervisor) pumpOutput(c *child, m *client.Message, p *stdio) *sync.WaitGroup {
	prefix := ""
	if s.o.Prefix {
		prefix = fmt.Sprintf("[p%d @%d] ", m.Partition, m.Offset)
	}
	// Commands run side by side: a last line without its newline is ended by
	// whoever writes next. One at a time, their output follows as the bytes came.
	join := s.o.Concurrency > 1
	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() {
		defer pumps.Done()
		s.out.pump(countingReader{p.outR, &c.outRead}, s.out.stdout, s.out.outLock, prefix, join, nil, &c.outPassed, func(err error) {
			c.mu.Lock()
			if c.outErr == nil {
				c.outErr = err
			}
			c.mu.Unlock()
			s.outputFailed(err)
		})
	}()
	var errTail *tail
	if s.o.Verbose || s.envelope {
		errTail = &c.tail
		c.tail.max = s.tailMax()
	}
	// narad's own stderr failing is not the command's failure: it has nowhere to be
	// reported either.
	go func() {
		defer pumps.Done()
		s.out.pump(p.errR, s.out.stderr, s.out.errLock, prefix, join, errTail, nil, nil)
	}()
	return &pumps
}

// reap waits for c to exit, kills what it left in its group, and closes done once its
// output was read to the end, or outputDrain passed and what it wrote on stdout
// before it exited is passed on. clock is the real one but in tests.
//
// The drain only stops waiting for an end of output that may never come (a process
// that escaped the group holds the pipe): stdout the command wrote before it exited
// is its work, and waits behind a slow reader of narad's stdout for as long as the run
// waits for the command (its lease kept; --max-processing-time and the stops still
// end that), where cutting it there would ack a message whose output was lost.
func (c *child) reap(p *stdio, pumps *sync.WaitGroup, clock drainClock) {
	_ = c.cmd.Wait()
	// Whatever the command left running in its group would go on without a lease.
	_ = signalGroup(c, syscall.SIGKILL)
	close(c.exited)
	_ = p.inW.Close()
	owed := int64(-1) // unknown where the pipe cannot say what it holds: not waited for
	if n, err := unreadBytes(p.outR); err == nil {
		owed = c.outRead.Load() + int64(n)
	}
	pumped := make(chan struct{})
	t := clock.afterFunc(outputDrain, func() {
		for owed >= 0 && c.outPassed.Load() < owed && !chans.Closed(pumped) {
			clock.sleep(outputDrain / 20)
		}
		closeAll(p.outR, p.errR)
	})
	pumps.Wait()
	close(pumped)
	t.Stop()
	closeAll(p.outR, p.errR)
	close(c.done)
}

// drainClock is the output drain's timer and its wait for a slow reader:
// time.AfterFunc and time.Sleep, which a test replaces to order events itself.
type drainClock struct {
	afterFunc func(time.Duration, func()) *time.Timer
	sleep     func(time.Duration)
}

// countingReader counts the bytes read from r into n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// exitCode is the command's exit status, -1 when a signal ended it.
func (c *child) exitCode() int { return c.cmd.ProcessState.ExitCode() }

// how says what ended the command: "exit 1", or "signal: killed".
func (c *child) how() string {
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal: " + ws.Signal().String()
	}
	return fmt.Sprintf("exit %d", c.exitCode())
}

// tailSize is how much of a command's stderr is kept for its failure line.
const tailSize = 200

// tailMax is how much of each command's stderr is kept: what an envelope needs, or
// the failure line's share of it.
func (s *Supervisor) tailMax() int {
	if s.envelope {
		return envelopeTail
	}
	return tailSize
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String is the last tailSize bytes kept, on one line, escaped for a terminal.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > tailSize {
		b = b[len(b)-tailSize:]
	}
	return joinLines(string(b))
}

// bytes is a copy of what is kept, as written.
func (t *tail) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}

// terminate asks the process group to stop (SIGTERM) and kills it after grace, or at
// once when ctx ends (the hard stop); it returns once the command is gone.
func (c *child) terminate(ctx context.Context, grace time.Duration) {
	c.signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.exited:
		c.drain(ctx)
		return
	case <-t.C:
	case <-ctx.Done():
	}
	c.kill(ctx)
}

// kill ends the process group at once and waits for it.
func (c *child) kill(ctx context.Context) {
	c.signal(syscall.SIGKILL)
	<-c.exited
	c.drain(ctx)
}

// drain waits for the output of a command that is gone, but not for ever: a stdout
// whose reader stopped reading would otherwise hold a stop up, and the message's
// lease with it, for as long as that reader sleeps. What is not passed on by then
// is lost, as the output of a stopped command may be. ctx's end (the hard stop)
// ends the wait: the second Ctrl-C must not wait for a reader.
func (c *child) drain(ctx context.Context) {
	t := time.NewTimer(outputDrain)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	case <-ctx.Done():
	}
}

func (c *child) signal(sig syscall.Signal) {
	// Once it exited, the group is gone and its id may be anyone's.
	if !chans.Closed(c.exited) {
		_ = signalGroup(c, sig)
	}
}

// The variables the supervisor sets; inherited values of them are dropped so that a
// key-less message does not pass on someone else's NARAD_KEY.
var naradVars = []string{
	"NARAD_TOPIC", "NARAD_PARTITION", "NARAD_OFFSET", "NARAD_KEY", "NARAD_KEY_BASE64",
	"NARAD_TIMESTAMP", "NARAD_RECEIPT_HANDLE", "NARAD_ADDR", "NARAD_ATTEMPT",
}

func baseEnv(env []string) []string {
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		for _, name := range naradVars {
			if strings.HasPrefix(kv, name+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// unpassable says why m cannot be handed to a command, "" when it can: the topic and
// the receipt handle go into the environment as the node sent them, and no variable
// can hold a NUL byte (the key has NARAD_KEY_BASE64 for that). Said as the node's,
// not as a command that would not start.
func unpassable(m *client.Message) string {
	for _, f := range []struct{ what, value string }{{"topic name", m.Topic}, {"receipt handle", m.ReceiptHandle}} {
		if strings.IndexByte(f.value, 0) >= 0 {
			return fmt.Sprintf("not run: the %s the node sent holds a NUL byte, which no environment variable can pass", f.what)
		}
	}
	return ""
}

// envFor is the command's environment for m, in its run number attempt.
func (s *Supervisor) envFor(m *client.Message, attempt int) []string {
	env := make([]string, len(s.env), len(s.env)+len(naradVars))
	copy(env, s.env)
	topic := m.Topic
	if topic == "" {
		topic = s.o.Topic
	}
	env = append(env,
		"NARAD_TOPIC="+topic,
		"NARAD_PARTITION="+strconv.Itoa(m.Partition),
		"NARAD_OFFSET="+strconv.FormatInt(m.Offset, 10),
		"NARAD_TIMESTAMP="+strconv.FormatInt(m.Timestamp, 10),
		// This run's number for the message in this process: its failures, and runs
		// that succeeded but came back (the ack refused, the lease lost, a stop), count.
		"NARAD_ATTEMPT="+strconv.Itoa(attempt),
	)
	if m.ReceiptHandle != "" {
		env = append(env, "NARAD_RECEIPT_HANDLE="+m.ReceiptHandle)
	}
	if s.o.Addr != "" {
		env = append(env, "NARAD_ADDR="+s.o.Addr)
	}
	if name, value, ok := keyVar(m); ok {
		env = append(env, name+"="+value)
	}
	return env
}

// keyVar is NARAD_KEY for a key that is text, NARAD_KEY_BASE64 for one that is not
// (an environment variable cannot hold a NUL, and a script should not have to guess
// an encoding).
func keyVar(m *client.Message) (name, value string, ok bool) {
	if m.Key == nil {
		return "", "", false
	}
	key, _, err := m.KeyBytes()
	if err != nil {
		// Not valid base64 after all: pass on what the node sent.
		return "NARAD_KEY_BASE64", *m.Key, true
	}
	if m.KeyEncoding != "base64" && utf8.Valid(key) && !strings.ContainsRune(string(key), 0) {
		return "NARAD_KEY", string(key), true
	}
	return "NARAD_KEY_BASE64", base64.StdEncoding.EncodeToString(key), true
}

// output passes the commands' output on, a whole line per write under one lock, so
// that lines of concurrent commands never mix.
type output struct {
	// outLock and errLock are the files written to. They are one lane when stdout and
	// stderr are one file (a terminal, `2>&1`), so that lines of the two never
	// interleave there; otherwise a stuck stdout never holds up narad's own lines on
	// stderr.
	outLock, errLock *lane
	quit             <-chan struct{} // the soft stop
	stdout, stderr   io.Writer
	// errStuck is set once a line of narad's own gave up waiting for errLock: later
	// lines then take it only if it is free, so a stop is not held up a second per line.
	errStuck atomic.Bool
}

// newOutput is the output to stdout and stderr (nil discards), ending its waits at quit.
func newOutput(stdout, stderr io.Writer, quit <-chan struct{}) *output {
	o := &output{outLock: newLane(), quit: quit,
		stdout: orDiscard(stdout), stderr: orDiscard(stderr)}
	o.errLock = o.outLock
	if !sameFile(stdout, stderr) {
		o.errLock = newLane()
	}
	return o
}

// lane is one file the commands' output goes to: the right to write to it, and whose
// line it was left in the middle of.
type lane struct {
	// tok is a token rather than a mutex so that a notice can stop waiting for it: a
	// line blocked on a stdout nobody reads holds it for as long as that lasts.
	tok chan struct{}
	// open is the writer whose line the file was left in the middle of (a piece of a
	// line longer than maxLine, or a last line without a newline), nil when the last
	// write ended its line. Whoever writes next ends that line first, so a line is
	// never continued by another's; but the next command's output follows a last
	// line as the bytes came when verbatim (commands run one at a time). Both are
	// guarded by tok.
	open     *byte
	verbatim bool
}

func newLane() *lane { return &lane{tok: make(chan struct{}, 1)} }

// sameFile reports whether a and b write to one file: one writer, or two open files of
// one terminal, pipe or file. A writer that wraps another (stderr that gives up on a
// stuck reader at the hard stop) is the file it wraps.
func sameFile(a, b io.Writer) bool {
	a, b = iostreams.Unwrap(a), iostreams.Unwrap(b)
	if a == nil || b == nil {
		return false
	}
	if a == b {
		return true
	}
	fa, okA := a.(*os.File)
	fb, okB := b.(*os.File)
	if !okA || !okB {
		return false
	}
	sa, errA := fa.Stat()
	sb, errB := fb.Stat()
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// maxLine is the longest line held back whole; a longer one goes out in pieces, each
// after a prefix of its own when another writer came between them.
const maxLine = 64 << 10

// readers are the line buffers of the pumps: two per command, each maxLine long,
// which allocated afresh was most of what a short command cost in memory and GC.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, maxLine) }}

// pump passes r on to w a line at a time, and keeps its end in t (if not nil). A write
// that fails is told to failed (if not nil) once; the rest of r is read and dropped,
// so the command is never blocked on output that can go nowhere. passed (if not nil)
// counts the bytes of r done with: written, or dropped. With join, a last line
// without a newline is ended by whoever writes next (lines of commands run side by
// side); without it, the next command's output follows it as the bytes came.
func (o *output) pump(r io.Reader, w io.Writer, lock *lane, prefix string, join bool, t *tail, passed *atomic.Int64, failed func(error)) {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		br.Reset(nil)
		readers.Put(br)
	}()
	me := new(byte) // this pump, as the writer of an open line
	var buf []byte
	midLine := false
	var werr error
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if t != nil {
				_, _ = t.Write(chunk)
			}
			last := err != nil && err != bufio.ErrBufferFull
			if werr == nil {
				lock.tok <- struct{}{}
				buf = buf[:0]
				if lock.open != nil && lock.open != me && !lock.verbatim {
					// Another's line was left open: end it rather than continue it.
					buf = append(buf, '\n')
				}
				if !midLine || lock.open != me {
					buf = append(buf, prefix...)
				}
				buf = append(buf, chunk...)
				if last && prefix != "" {
					// A last line without its newline: end it, or the next command's
					// prefixed line would start in the middle of it.
					buf = append(buf, '\n')
				}
				lock.open, lock.verbatim = nil, false
				if buf[len(buf)-1] != '\n' {
					lock.open, lock.verbatim = me, last && !join
				}
				_, werr = w.Write(buf)
				<-lock.tok
				if werr != nil && failed != nil {
					failed(werr)
				}
			}
			midLine = err == bufio.ErrBufferFull
			if passed != nil {
				passed.Add(int64(len(chunk)))
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// notice is a line of narad's own about a message on stderr, "[p1 @3] text".
func (o *output) notice(ctx context.Context, m *client.Message, text string) {
	o.line(ctx, fmt.Sprintf("[p%d @%d] %s", m.Partition, m.Offset, joinLines(text)))
}

// joinLines makes text safe to print as one line on a terminal: line breaks become
// " | " and control characters visible escapes.
func joinLines(text string) string {
	text = strings.TrimSpace(text)
	text = strings.NewReplacer("\r\n", " | ", "\n", " | ", "\r", " | ", "\t", " ").Replace(text)
	return textenc.Escape(text)
}

// line writes a line of narad's own on stderr. Once a stop came (the soft one, or
// ctx's end) it waits for the lock only outputDrain more, then drops the line: what
// it is about must still be settled and the stop must end. Once one line was dropped
// so, the next waits only if the lock is free: stderr is stuck behind its reader.
func (o *output) line(ctx context.Context, text string) {
	select {
	case o.errLock.tok <- struct{}{}:
	case <-o.quit:
		if !o.lockWithin(outputDrain) {
			return
		}
	case <-ctx.Done():
		if !o.lockWithin(outputDrain) {
			return
		}
	}
	defer func() { <-o.errLock.tok }()
	if o.errLock.open != nil {
		text = "\n" + text // a command's line left open: ours does not continue it
		o.errLock.open, o.errLock.verbatim = nil, false
	}
	_, _ = io.WriteString(o.stderr, text+"\n")
}

func (o *output) lockWithin(d time.Duration) bool {
	if o.errStuck.Load() {
		d = 0
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case o.errLock.tok <- struct{}{}:
		return true
	case <-t.C:
		select {
		case o.errLock.tok <- struct{}{}:
			return true
		default:
		}
		o.errStuck.Store(true)
		return false
	}
}
