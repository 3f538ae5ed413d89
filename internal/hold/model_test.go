package hold

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
)

// fakeHeld records what the model asked of a message.
type fakeHeld struct {
	m       *client.Message
	mu      sync.Mutex
	calls   []string
	ackErr  error
	extErr  error
	renewed time.Time
	lost    bool
}

func (f *fakeHeld) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}
func (f *fakeHeld) Message() *client.Message { return f.m }
func (f *fakeHeld) Ack() error               { f.record("ack"); return f.ackErr }
func (f *fakeHeld) Nack(why consumer.Cause) error {
	f.record("nack")
	return nil
}
func (f *fakeHeld) DeadLettered(consumer.Cause) error { f.record("deadlettered"); return f.ackErr }
func (f *fakeHeld) LeaseLost() error                  { f.record("leaselost"); return nil }
func (f *fakeHeld) Extend(context.Context) error      { f.record("extend"); return f.extErr }
func (f *fakeHeld) Lease() (time.Time, bool)          { return f.renewed, f.lost }
func (f *fakeHeld) LostWhy() string                   { return "lease gone (410 on extend)" }
func (f *fakeHeld) got() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, ",")
}

var t0 = time.Date(2026, 12, 2, 3, 6, 49, 0, time.UTC)

func msgOf(payload string, offset int64) *client.Message {
	k := "customer-42"
	return &client.Message{Topic: "orders", Partition: 1, Offset: offset, Key: &k,
		Payload: []byte(payload), Timestamp: t0.Unix(), ReceiptHandle: "h"}
}

// harness drives a Model as bubbletea would, running each command at once: timers
// never fire (After returns nothing), so a test orders events itself.
type harness struct {
	t      *testing.T
	m      Model
	asked  int
	done   int
	quit   bool
	clip   int
	timers []func(time.Time) tea.Msg
	prod   []string
}

func newHarness(t *testing.T, mod func(*Options)) *harness {
	h := &harness{t: t}
	o := Options{
		Topic: "orders", Lease: 30 * time.Second, Styles: render.NewStyles(&bytes.Buffer{}, false),
		UTC: true, Now: func() time.Time { return t0 },
		After: func(_ time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
			h.timers = append(h.timers, fn)
			return nil
		},
		Ready: func() { h.asked++ },
		Done:  func() { h.done++ },
		Produce: func(_ context.Context, topic string, body []byte, key *string) error {
			h.prod = append(h.prod, topic+":"+string(body))
			return nil
		},
	}
	if mod != nil {
		mod(&o)
	}
	h.m = New(o)
	h.run(h.m.Init())
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	return h
}

func (h *harness) send(msg tea.Msg) {
	var cmd tea.Cmd
	var m tea.Model
	m, cmd = h.m.Update(msg)
	h.m = m.(Model)
	h.run(cmd)
}

func (h *harness) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			h.run(c)
		}
	case tea.QuitMsg:
		h.quit = true
	case spinMsg:
		// The spinner animates on timers, which never fire here.
	default:
		if _, ok := msg.(tickMsg); ok {
			return
		}
		if strings.Contains(strings.ToLower(typeName(msg)), "clipboard") {
			h.clip++
			return
		}
		h.send(msg)
	}
}

func typeName(v any) string { return strings.TrimPrefix(strings.TrimPrefix(fmtType(v), "*"), "tea.") }

func (h *harness) key(s string) {
	var k tea.KeyPressMsg
	switch s {
	case "ctrl+c":
		k = tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "down":
		k = tea.KeyPressMsg{Code: tea.KeyDown}
	case "enter":
		k = tea.KeyPressMsg{Code: tea.KeyEnter}
	default:
		k = tea.KeyPressMsg{Code: rune(s[0]), Text: s}
	}
	h.send(k)
}

func (h *harness) arrive(f *fakeHeld) {
	h.send(Arrived{Held: f, Msg: f.m})
}

func (h *harness) view() string { return h.m.View().Content }

func TestAckSettlesOnceAndTakesTheNext(t *testing.T) {
	h := newHarness(t, nil)
	if h.asked != 1 {
		t.Fatalf("asked for %d messages at start, want 1", h.asked)
	}
	f := &fakeHeld{m: msgOf(`{"order_id":"ord_1"}`, 7), renewed: t0}
	h.arrive(f)
	h.key("a")
	h.key("a") // the screen shows the next one (none yet): nothing more to ack
	if got := f.got(); got != "ack" {
		t.Errorf("calls %q, want one ack", got)
	}
	if h.done != 1 || h.asked != 2 || h.m.Tally().acked != 1 {
		t.Errorf("done %d asked %d tally %+v", h.done, h.asked, h.m.Tally())
	}
	if !strings.Contains(h.view(), "waiting for a message on orders") {
		t.Errorf("screen after the ack:\n%s", h.view())
	}
}

func TestAKeyWhileTheAckIsOnItsWaySendsNothing(t *testing.T) {
	h := newHarness(t, nil)
	f := &fakeHeld{m: msgOf(`1`, 1), renewed: t0}
	h.arrive(f)
	// Update alone, without running the ack's command: it is still on its way.
	m, _ := h.m.Update(tea.KeyPressMsg{Code: 'a', Text: "a"})
	h.m = m.(Model)
	for _, k := range []string{"a", "n", "d", "s", "e"} {
		m, cmd := h.m.Update(tea.KeyPressMsg{Code: rune(k[0]), Text: k})
		h.m = m.(Model)
		if cmd != nil {
			h.run(cmd)
		}
	}
	if got := f.got(); got != "" {
		t.Errorf("keys pressed while acking called %q", got)
	}
	if !strings.Contains(h.view(), "acking") {
		t.Errorf("no spinner line while acking:\n%s", h.view())
	}
}

func TestAFailedAckStaysOnScreenWithItsReason(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{consumer.ErrLeaseGone, "lease lost"},
		{errors.New("ack: 503 unavailable (gave up)"), "acking failed"},
	} {
		h := newHarness(t, nil)
		f := &fakeHeld{m: msgOf(`"hello"`, 3), renewed: t0, ackErr: c.err}
		h.arrive(f)
		h.key("a")
		v := h.view()
		if !strings.Contains(v, c.want) || !strings.Contains(v, "p1 @3") {
			t.Errorf("%v: screen:\n%s", c.err, v)
		}
		h.key("a") // settled already: never again
		h.key("s")
		if got := f.got(); got != "ack" {
			t.Errorf("%v: calls %q, want one ack", c.err, got)
		}
		if h.asked != 2 || !strings.Contains(h.view(), "waiting") {
			t.Errorf("%v: s did not move on (asked %d):\n%s", c.err, h.asked, h.view())
		}
	}
}

func TestQuitGivesBackWhatIsHeld(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		h := newHarness(t, nil)
		f := &fakeHeld{m: msgOf(`1`, 1), renewed: t0}
		h.arrive(f)
		h.key(k)
		if got := f.got(); got != "nack" || !h.quit {
			t.Errorf("%s: calls %q quit %v", k, got, h.quit)
		}
		if s := h.m.Summary(); s != "acked 0, nacked 0, given back 1" {
			t.Errorf("summary %q", s)
		}
	}
}

// update is Update without running the commands it returns: what they would send
// stays on its way.
func (h *harness) update(msg tea.Msg) {
	m, _ := h.m.Update(msg)
	h.m = m.(Model)
}

// noteLine is the screen's line above the status bar.
func (h *harness) noteLine() string {
	lines := strings.Split(h.view(), "\n")
	return lines[len(lines)-2]
}

// A quitting key while an ack is still retried: the screen says what it waits for,
// that the run gives it up at --shutdown-grace (counted down from the key), and that
// a second q or Ctrl-C gives it up now, which it does.
func TestQuittingSaysWhatItWaitsForAndUntilWhen(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		h := newHarness(t, func(o *Options) { o.ShutdownGrace = 30 * time.Second })
		f := &fakeHeld{m: msgOf(`1`, 1), renewed: t0}
		h.arrive(f)
		h.update(tea.KeyPressMsg{Code: 'a', Text: "a"}) // the ack is on its way, retried
		h.key(k)
		if h.quit {
			t.Fatalf("%s: quit with the ack on its way", k)
		}
		want := "quitting: 1 ack retried, giving up in 30s (q again to give up now; Ctrl-C too)"
		if got := h.noteLine(); !strings.HasSuffix(got, want) {
			t.Errorf("%s: note %q, want %q (whole, at 80 columns)", k, got, want)
		}
		h.update(tickMsg(t0.Add(2*time.Second + 300*time.Millisecond)))
		if got := h.noteLine(); !strings.Contains(got, "giving up in 28s (") {
			t.Errorf("%s: 2.3s later, note %q", k, got)
		}
		h.update(tickMsg(t0.Add(31 * time.Second)))
		if got := h.noteLine(); !strings.Contains(got, "giving up in 0s (") {
			t.Errorf("%s: past the grace, note %q", k, got)
		}
		h.key(k) // the second: leave now, the ack given up
		if !h.quit || h.m.Tally().failed != 1 {
			t.Errorf("%s again: quit %v, tally %+v", k, h.quit, h.m.Tally())
		}
	}
}

// Without a grace to count down the line says the rest; several requests on their way
// are counted by kind.
func TestQuittingNamesWhatIsOnItsWay(t *testing.T) {
	h := newHarness(t, nil)
	a := &fakeHeld{m: msgOf(`1`, 1), renewed: t0}
	h.arrive(a)
	h.update(tea.KeyPressMsg{Code: 's', Text: "s"}) // skipped: given back once the next arrives
	b := &fakeHeld{m: msgOf(`2`, 2), renewed: t0}
	h.update(Arrived{Held: b, Msg: b.m}) // a's give-back on its way
	h.update(tea.KeyPressMsg{Code: 'a', Text: "a"})
	h.update(tea.KeyPressMsg{Code: 'q', Text: "q"})
	if got, want := h.noteLine(), "quitting: 2 requests retried (q again to give up now; Ctrl-C too)"; !strings.HasSuffix(got, want) {
		t.Errorf("note %q, want %q", got, want)
	}
}

func TestStopGivesBackAndQuits(t *testing.T) {
	h := newHarness(t, nil)
	f := &fakeHeld{m: msgOf(`1`, 1), renewed: t0}
	h.arrive(f)
	h.send(Stop{})
	if f.got() != "nack" || !h.quit {
		t.Errorf("calls %q quit %v", f.got(), h.quit)
	}
	// One taken while closing goes straight back.
	late := &fakeHeld{m: msgOf(`2`, 2), renewed: t0}
	h.arrive(late)
	if late.got() != "nack" {
		t.Errorf("late arrival: %q", late.got())
	}
}

func TestSummaryCountsEachDecision(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.DeadLetter = "dlq" })
	for i, k := range []string{"a", "a", "n", "d", "a"} {
		f := &fakeHeld{m: msgOf(`{"n":1}`, int64(i)), renewed: t0}
		h.arrive(f)
		h.key(k)
	}
	if s := h.m.Summary(); s != "acked 3, nacked 1, dead-lettered 1" {
		t.Errorf("summary %q", s)
	}
	if len(h.prod) != 1 || h.prod[0] != `dlq:{"n":1}` {
		t.Errorf("produced %q", h.prod)
	}
}

func TestDeadLetterProducesThenAcks(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.DeadLetter = "dlq" })
	f := &fakeHeld{m: msgOf(`"bad"`, 1), renewed: t0}
	h.arrive(f)
	h.key("d")
	if f.got() != "deadlettered" || len(h.prod) != 1 || h.prod[0] != "dlq:bad" {
		t.Errorf("calls %q produced %q", f.got(), h.prod)
	}

	// A produce that fails settles nothing: the message stays held, the reason shown.
	h = newHarness(t, func(o *Options) {
		o.DeadLetter = "dlq"
		o.Produce = func(context.Context, string, []byte, *string) error { return errors.New("topic dlq: not found") }
	})
	f = &fakeHeld{m: msgOf(`"bad"`, 1), renewed: t0}
	h.arrive(f)
	h.key("d")
	if f.got() != "" || !strings.Contains(h.view(), "dead-letter produce failed: topic dlq: not found") {
		t.Errorf("calls %q, screen:\n%s", f.got(), h.view())
	}

	// Without --dead-letter, d says how to get one.
	h = newHarness(t, nil)
	f = &fakeHeld{m: msgOf(`"bad"`, 1), renewed: t0}
	h.arrive(f)
	h.key("d")
	if f.got() != "" || !strings.Contains(h.view(), "--dead-letter TOPIC") {
		t.Errorf("calls %q, screen:\n%s", f.got(), h.view())
	}
}

// With Letter (--dead-letter-format envelope) d produces what Letter makes of the
// message and how many times it was seen, in place of the payload.
func TestDeadLetterWithLetter(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.DeadLetter = "dlq"
		o.Letter = func(m *client.Message, payload []byte, seen int) ([]byte, int, error) {
			return []byte(fmt.Sprintf("letter of %s (%s) seen %d", m.Payload, payload, seen)), 0, nil
		}
	})
	f := &fakeHeld{m: msgOf(`"bad"`, 1), renewed: t0}
	h.arrive(f)
	h.key("d")
	if f.got() != "deadlettered" || len(h.prod) != 1 || h.prod[0] != `dlq:letter of "bad" (bad) seen 1` {
		t.Errorf("calls %q produced %q", f.got(), h.prod)
	}
}

// A letter in another form than asked (an envelope over the node's limit, sent as
// the payload alone) is produced as Letter made it, and the note says so once the
// message is settled, as exec mode's line does, within 80 columns.
func TestDeadLetterSaysHowTheLetterWent(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.DeadLetter = "dlq"
		o.Letter = func(m *client.Message, payload []byte, seen int) ([]byte, int, error) {
			return payload, 1_150_000, nil
		}
	})
	f := &fakeHeld{m: msgOf(`"bad"`, 3), renewed: t0}
	h.arrive(f)
	h.key("d")
	if f.got() != "deadlettered" || len(h.prod) != 1 || h.prod[0] != "dlq:bad" {
		t.Errorf("calls %q produced %q", f.got(), h.prod)
	}
	const want = "dead-lettered as the payload alone (its envelope, 1.1 MiB, is over 1 MiB)"
	if !strings.Contains(h.view(), want) {
		t.Errorf("no %q on the screen:\n%s", want, h.view())
	}
}

func TestSkipTakesTheNextBeforeGivingBack(t *testing.T) {
	h := newHarness(t, nil)
	first := &fakeHeld{m: msgOf(`1`, 1), renewed: t0}
	h.arrive(first)
	h.key("s")
	if first.got() != "" || h.asked != 2 {
		t.Fatalf("after s: calls %q asked %d (the next is asked for first)", first.got(), h.asked)
	}
	second := &fakeHeld{m: msgOf(`2`, 2), renewed: t0}
	h.arrive(second)
	if first.got() != "nack" || !strings.Contains(h.view(), "p1 @2") {
		t.Errorf("calls %q, screen:\n%s", first.got(), h.view())
	}
	if h.asked != 2 {
		t.Errorf("asked %d: the give-back of a skipped one must not ask again", h.asked)
	}

	// With nothing else ready, the skipped one goes back after a while anyway.
	h = newHarness(t, nil)
	only := &fakeHeld{m: msgOf(`1`, 1), renewed: t0}
	h.arrive(only)
	h.key("s")
	for _, fire := range h.timers {
		if msg := fire(t0); msg != nil {
			if _, ok := msg.(skipDue); ok {
				h.send(msg)
			}
		}
	}
	if only.got() != "nack" || h.m.Tally().skipped != 1 {
		t.Errorf("calls %q tally %+v", only.got(), h.m.Tally())
	}
}

func TestSeenCountsRedeliveries(t *testing.T) {
	h := newHarness(t, nil)
	for range 2 {
		h.arrive(&fakeHeld{m: msgOf(`1`, 9), renewed: t0})
		if strings.Contains(h.view(), "seen 2×") {
			return
		}
		h.key("n")
	}
	t.Errorf("second delivery of p1 @9 not counted:\n%s", h.view())
}

func TestLeaseCountsDownAndLostIsShown(t *testing.T) {
	now := t0.Add(12 * time.Second)
	h := newHarness(t, func(o *Options) { o.Now = func() time.Time { return now } })
	f := &fakeHeld{m: msgOf(`1`, 1), renewed: t0}
	h.arrive(f)
	h.send(tickMsg(now))
	if v := h.view(); !strings.Contains(v, "lease 18s left") {
		t.Errorf("countdown:\n%s", v)
	}
	f.mu.Lock()
	f.lost = true
	f.mu.Unlock()
	h.send(tickMsg(now))
	h.key("a")
	if v := h.view(); !strings.Contains(v, "lease lost") || f.got() != "" {
		t.Errorf("calls %q, screen:\n%s", f.got(), v)
	}
	if h.done != 1 || h.m.Tally().lost != 1 {
		t.Errorf("done %d tally %+v", h.done, h.m.Tally())
	}
}

func TestExtendNowAndItsLoss(t *testing.T) {
	h := newHarness(t, nil)
	f := &fakeHeld{m: msgOf(`1`, 1), renewed: t0}
	h.arrive(f)
	h.key("e")
	if f.got() != "extend" || !strings.Contains(h.view(), "lease extended") {
		t.Errorf("calls %q screen:\n%s", f.got(), h.view())
	}
	f.extErr = consumer.ErrLeaseGone
	h.key("e")
	if f.got() != "extend,extend,leaselost" || !strings.Contains(h.view(), "lease lost") {
		t.Errorf("calls %q screen:\n%s", f.got(), h.view())
	}
}

func TestPeekDisablesSettling(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Peek = true })
	h.send(Arrived{Msg: msgOf(`{"a":1}`, 1)})
	for _, k := range []string{"a", "n", "e", "d"} {
		h.key(k)
		if !strings.Contains(h.view(), "--peek takes nothing") {
			t.Errorf("%s in peek:\n%s", k, h.view())
		}
	}
	h.key("s")
	if h.asked != 2 {
		t.Errorf("s in peek asked %d, want the next", h.asked)
	}
}

func TestScreenFits80x24AndReflows(t *testing.T) {
	long := `{"text":"` + strings.Repeat("word ", 100) + `","list":[` + strings.Repeat(`1,`, 60) + `2]}`
	h := newHarness(t, nil)
	h.arrive(&fakeHeld{m: msgOf(long, 1), renewed: t0})
	for _, size := range [][2]int{{80, 24}, {40, 12}, {120, 40}} {
		h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		lines := strings.Split(h.view(), "\n")
		if len(lines) != size[1] {
			t.Errorf("%dx%d: %d lines:\n%s", size[0], size[1], len(lines), h.view())
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > size[0] {
				t.Errorf("%dx%d: line %d is %d wide: %q", size[0], size[1], i, w, l)
			}
		}
	}
	h.send(tea.WindowSizeMsg{Width: 40, Height: 12})
	if !strings.Contains(h.view(), "word word") {
		t.Errorf("wrapped text lost:\n%s", h.view())
	}
	h.key("down")
	h.key("down")
	if !strings.Contains(h.view(), "%") {
		t.Errorf("no scroll position on a long payload:\n%s", h.view())
	}
}

func TestPayloadsAsAPersonReadsThem(t *testing.T) {
	bin := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x01\x02")
	hostile := "evil \x1b]0;title\x07 \x1b[2J \u202e done\ttab"
	for _, c := range []struct {
		name string
		m    *client.Message
		want []string
	}{
		{"json", msgOf(`{"order_id":"ord_1","amount":4999,"ok":true,"tags":[],"n":null}`, 1),
			[]string{"{", `  "order_id": "ord_1",`, `  "amount": 4999,`, `  "ok": true,`, `  "tags": [],`, `  "n": null`, "}"}},
		{"text", msgOf(`"line one\nline two"`, 1), []string{"line one", "line two"}},
		{"binary", &client.Message{Topic: "orders", Payload: []byte(`"` + base64.StdEncoding.EncodeToString(bin) + `"`), PayloadEncoding: "base64"},
			[]string{"00000000  89 50 4e 47 0d 0a 1a 0a  00 00 00 0d 49 48 44 52  |.PNG........IHDR|", "00000010  01 02"}},
		{"hostile text", msgOf(jsonString(hostile), 1), []string{`evil \x1b]0;title\x07 \x1b[2J \u202e done    tab`}},
		{"hostile json", msgOf(`{"k":"`+"\u009b2J \u202e"+`","e":"\u001b"}`, 1), []string{`  "k": "\u009b2J \u202e",`, `  "e": "\u001b"`}},
	} {
		h := newHarness(t, nil)
		h.send(Arrived{Held: &fakeHeld{m: c.m, renewed: t0}, Msg: c.m})
		v := h.view()
		for _, w := range c.want {
			if !strings.Contains(v, w) {
				t.Errorf("%s: %q not on screen:\n%s", c.name, w, v)
			}
		}
		if strings.ContainsAny(v, "\x1b\x07\u009b\u202e\t") {
			t.Errorf("%s: a control character reached the screen: %q", c.name, v)
		}
	}
}

func TestRawShowsTheBytesAsProduced(t *testing.T) {
	h := newHarness(t, nil)
	h.arrive(&fakeHeld{m: msgOf(`{"a":  1}`, 1), renewed: t0})
	h.key("r")
	if !strings.Contains(h.view(), `{"a":  1}`) {
		t.Errorf("raw:\n%s", h.view())
	}
	h.key("r")
	if !strings.Contains(h.view(), `  "a": 1`) {
		t.Errorf("pretty again:\n%s", h.view())
	}
}

func TestColourOnlyWhenAskedFor(t *testing.T) {
	for _, color := range []bool{false, true} {
		h := newHarness(t, func(o *Options) { o.Styles = render.NewStyles(&bytes.Buffer{}, color) })
		h.arrive(&fakeHeld{m: msgOf(`{"a":1}`, 1), renewed: t0})
		if got := strings.Contains(h.view(), "\x1b["); got != color {
			t.Errorf("colour %v: escape codes on screen %v:\n%q", color, got, h.view())
		}
	}
}

func TestCopyAndHelp(t *testing.T) {
	h := newHarness(t, nil)
	h.arrive(&fakeHeld{m: msgOf(`{"a":1}`, 1), renewed: t0})
	h.key("y")
	if h.clip != 1 || !strings.Contains(h.view(), "copied 7 B") {
		t.Errorf("clipboard %d:\n%s", h.clip, h.view())
	}
	h.key("?")
	if !strings.Contains(h.view(), "dead-letter: produce to --dead-letter, then ack") {
		t.Errorf("help:\n%s", h.view())
	}
	// Enter skips too: the help says so, as it says every other key.
	if !regexp.MustCompile(`s, enter +skip: take the next`).MatchString(h.view()) {
		t.Errorf("help does not name enter for skip:\n%s", h.view())
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[r>>4])
			b.WriteByte(hexDigits[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func fmtType(v any) string { return fmt.Sprintf("%T", v) }

// What the client would have written on stderr is shown on the screen, escaped; a
// settlement's answer replaces it.
func TestNoticesGoToTheNoteLine(t *testing.T) {
	h := newHarness(t, nil)
	f := &fakeHeld{m: msgOf(`1`, 1), renewed: t0}
	h.arrive(f)
	h.send(Notice{Text: "narad: extend: cannot reach \x1b[2J; retrying\n"})
	if v := h.view(); !strings.Contains(v, `narad: extend: cannot reach \x1b[2J; retrying`) || strings.Contains(v, "\x1b") {
		t.Errorf("screen:\n%q", v)
	}
	f.ackErr = consumer.ErrLeaseGone
	h.key("a")
	if v := h.view(); strings.Contains(v, "cannot reach") || !strings.Contains(v, "lease lost") {
		t.Errorf("screen after the ack's answer:\n%s", v)
	}
}

// An extend on its way (a node answering 503 to extends retries it for up to 30s)
// never holds up a decision: a takes the ack at once, and the extend's answer that
// comes after it changes nothing (settled once, counted once).
func TestAckWhileAnExtendIsOnItsWay(t *testing.T) {
	h := newHarness(t, nil)
	f := &fakeHeld{m: msgOf(`{"n":1}`, 0), renewed: t0}
	h.arrive(f)
	m, extend := h.m.Update(tea.KeyPressMsg{Code: 'e', Text: "e"})
	h.m = m.(Model)
	if !strings.Contains(h.view(), "extending the lease") {
		t.Fatalf("no extend on its way:\n%s", h.view())
	}
	h.key("a")
	if got := f.got(); got != "ack" {
		t.Fatalf("a while extending: calls %q, want the ack sent", got)
	}
	h.run(extend) // the extend answers only now
	if got := f.got(); got != "ack,extend" || h.done != 1 || h.m.Tally().acked != 1 || h.m.Tally().lost != 0 {
		t.Errorf("calls %q, done %d, tally %+v: want one ack, settled and counted once", got, h.done, h.m.Tally())
	}
	if h.asked != 2 || !strings.Contains(h.view(), "waiting for a message") {
		t.Errorf("after the ack: asked %d\n%s", h.asked, h.view())
	}
}

// The countdown says "kept" only while the keeper's extends are confirmed: past two
// thirds of the lease with none (the node gone, extends answered 503) it says so.
func TestLeaseNotKeptWhenExtendsFail(t *testing.T) {
	h := newHarness(t, nil) // a 30s lease
	f := &fakeHeld{m: msgOf("x", 0), renewed: t0.Add(-5 * time.Second)}
	h.arrive(f)
	if v := h.view(); !strings.Contains(v, "lease 25s left, kept") {
		t.Fatalf("just extended:\n%s", v)
	}
	f.renewed = t0.Add(-22 * time.Second) // the extend due at 10s never confirmed
	h.send(tickMsg(t0))
	if v := h.view(); strings.Contains(v, "kept") || !strings.Contains(v, "lease 8s left, extends not confirmed") {
		t.Errorf("no extend confirmed for 22s of a 30s lease:\n%s", v)
	}
}

// --peek holds nothing, so its screen closing with nothing on it does not say it is
// giving anything back.
func TestPeekQuittingGivesNothingBack(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Peek = true })
	h.send(Stop{})
	if v := h.view(); strings.Contains(v, "giving back") || !strings.Contains(v, "quitting…") {
		t.Errorf("peek closing:\n%s", v)
	}
	h = newHarness(t, nil)
	h.send(Stop{})
	if v := h.view(); !strings.Contains(v, "giving back what is held…") {
		t.Errorf("closing:\n%s", v)
	}
}
