package hold

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/textenc"
)

// Held is a message taken for the screen: a consumer.Delivery in a run. The model
// calls it only from commands, never from Update, and at most one settlement per
// message: the settle-once rule and the lease keeper stay in package consumer.
type Held interface {
	Message() *client.Message
	Ack() error
	Nack(why consumer.Cause) error
	DeadLettered(why consumer.Cause) error
	LeaseLost() error
	Extend(ctx context.Context) error
	Lease() (renewed time.Time, lost bool)
	// LostWhy says how the keeper lost the lease: a 410, or no extend confirmed for a
	// whole lease.
	LostWhy() string
}

var _ Held = consumer.Delivery{}

// Options configure the model.
type Options struct {
	Topic string
	// Lease is the topic's lease (visibility timeout), which the status line counts
	// down; 0 when it could not be learnt (then the time held is shown).
	Lease time.Duration
	// Peek browses without taking: Arrived carries no Held, and the keys that settle
	// say so.
	Peek bool
	// DeadLetter is the --dead-letter topic; empty disables d.
	DeadLetter string
	// Produce copies a payload, with its key, to the dead-letter topic.
	Produce func(ctx context.Context, topic string, body []byte, key *string) error
	// Letter, when set, is the dead letter of a message seen times in this run, in
	// place of payload, its decoded bytes (an envelope). replaced, when not 0, is the
	// size of the envelope it would have been, over the node's limit: the letter is
	// the payload then, and the screen says so.
	Letter func(m *client.Message, payload []byte, seen int) (letter []byte, replaced int, err error)
	Styles render.Styles
	// UTC shows message times in UTC; Location pins the zone otherwise (nil: local).
	UTC      bool
	Location *time.Location
	// Now is the clock and After its timer (tea.Tick); tests pin the one and
	// leave the other unfired. Nil means time.Now and tea.Tick.
	Now   func() time.Time
	After func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd
	// Ready asks the run for one more message, Done says one handed over is settled
	// for good. Both are called from commands; either may be nil.
	Ready func()
	Done  func()
	// Quitting says the screen is quitting (q, Ctrl-C, or Stop) and waits for
	// settlements still on their way, so the run can bound that wait as it bounds
	// one after a signal. Called from a command, maybe more than once; may be nil.
	Quitting func()
	// ShutdownGrace is how long the run lets settlements still on their way finish
	// once the screen quits (--shutdown-grace): then it gives them up, and the quitting
	// line counts it down. 0: not said.
	ShutdownGrace time.Duration
}

// Arrived is a message handed to the screen: Held is nil with Peek.
type Arrived struct {
	Held Held
	Msg  *client.Message
}

// NodeLost and NodeBack are the node going away and answering again: the run retries
// meanwhile, and the screen says so.
type (
	NodeLost struct{ Err error }
	NodeBack struct{}
)

// Notice is a line the run would have written on stderr (a retry notice, -v): the
// screen owns the terminal, so it is shown in the note line instead.
type Notice struct{ Text string }

// Stop is the run stopping (a signal, --timeout, --count reached): what is held is
// given back and the program quits.
type Stop struct{}

type (
	tickMsg   time.Time
	resultMsg struct {
		e   *entry
		act action
		err error
		// replaced is Letter's word on a dead letter produced (actProduce).
		replaced int
	}
	skipDue struct{ e *entry }
	askMsg  struct{}
)

// action is what a key asked the node to do with a message.
type action int

const (
	actAck action = iota + 1
	actNack
	actSkip
	actGiveBack
	actExtend
	actProduce
	actDeadLetter
)

func (a action) doing() string {
	switch a {
	case actAck:
		return "acking"
	case actNack, actSkip, actGiveBack:
		return "giving back"
	case actExtend:
		return "extending the lease"
	case actProduce:
		return "producing to the dead-letter topic"
	case actDeadLetter:
		return "acking after the dead-letter copy"
	}
	return ""
}

// entry is one message on or waiting for the screen.
type entry struct {
	h    Held
	m    *client.Message
	seen int
	busy action // a settlement (or the dead-letter produce) on its way, 0 when none
	// extending: an extend asked with e is on its way. It is not a settlement, so it
	// never holds one up: a node that refuses extends (503, retried for up to 30s)
	// may still take the ack the person decided on, before the lease runs out.
	extending bool
	since     time.Time
	// final: settled (or lost) for good; all that is left is to move on.
	final bool
	// replaced is what Letter said of the dead letter produced for it.
	replaced int
	note     string
	bad      bool
	// The payload, formatted once per raw/pretty and fitted once per width.
	f                  [2]*formatted
	fitWidth, fitRaw   int
	fitLines           []string
	skipping, released bool
}

// tally is what the session did, for the summary line.
type tally struct {
	acked, nacked, skipped, deadLettered, givenBack, lost, failed, seen int
}

// Model is hold mode's one screen.
type Model struct {
	o     Options
	keys  keyMap
	c     codes
	now   time.Time
	w, h  int
	queue []*entry // the head is on screen
	skip  []*entry // skipped, given back once the next one arrived
	seen  map[[2]int64]int
	pg    pager
	frame int // of the spinner shown while a request is on its way
	raw   bool
	help  bool
	quit  bool
	// quitAt is when quit was set: the run's grace for what is on its way counts
	// from there.
	quitAt time.Time
	// shown is the entry whose payload the pager holds.
	shown    *entry
	spinning bool
	node     string // the node is gone, while it is
	note     string // a note not about one message (the clipboard, a refused key)
	tally    tally
}

// skipWait is how long a skipped message is held while the next one is awaited: long
// enough for a ready message to arrive (a consume polls a second at most), short
// enough that a topic holding only this one gets it back soon.
const skipWait = 2 * time.Second

// spinEvery is the spinner's frame time; spinFrames its frames.
const spinEvery = 120 * time.Millisecond

var spinFrames = [...]string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

type spinMsg struct{}

// tickEvery is how often the lease countdown is redrawn.
const tickEvery = 250 * time.Millisecond

// New returns the model; the screen is sized by the first WindowSizeMsg.
func New(o Options) Model {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = tea.Tick
	}
	return Model{
		o: o, keys: newKeyMap(), c: codesOf(o.Styles), now: o.Now(),
		w: 80, h: 24, seen: map[[2]int64]int{}, pg: pager{height: 20},
	}
}

// Init asks for the first message and starts the clock.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.ask(), m.tick())
}

func (m Model) tick() tea.Cmd {
	return m.o.After(tickEvery, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m Model) ask() tea.Cmd  { return callCmd(m.o.Ready) }
func (m Model) done() tea.Cmd { return callCmd(m.o.Done) }

// callCmd is a command that calls f (the feed's side), so that Update itself only
// returns what is to be done, as with every other effect; nil when there is no f.
func callCmd(f func()) tea.Cmd {
	if f == nil {
		return nil
	}
	return func() tea.Msg {
		f()
		return nil
	}
}

// Summary is the line printed once the screen is gone.
func (m Model) Summary() string {
	t := m.tally
	if m.o.Peek {
		return fmt.Sprintf("seen %d, took nothing", t.seen)
	}
	parts := []string{fmt.Sprintf("acked %d", t.acked), fmt.Sprintf("nacked %d", t.nacked)}
	for _, p := range []struct {
		n    int
		what string
	}{{t.deadLettered, "dead-lettered"}, {t.skipped, "skipped"}, {t.givenBack, "given back"},
		{t.lost, "lease lost"}, {t.failed, "not confirmed"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p.what, p.n))
		}
	}
	return strings.Join(parts, ", ")
}

// Tally is the session's counts (tests).
func (m Model) Tally() tally { return m.tally }

func (m *Model) head() *entry {
	if len(m.queue) == 0 {
		return nil
	}
	return m.queue[0]
}

// Update handles one message; requests to the node go out as commands.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		return m, m.layout()
	case tickMsg:
		m.now = time.Time(msg)
		return m, tea.Batch(m.tick(), m.checkLeases())
	case spinMsg:
		if !m.busy() && !m.extending() {
			m.spinning = false
			return m, nil // the spinner stops until something is on its way again
		}
		m.frame++
		return m, m.o.After(spinEvery, func(time.Time) tea.Msg { return spinMsg{} })
	case Arrived:
		return m.arrived(msg)
	case Stop:
		return m.stop()
	case NodeLost:
		m.node = "node lost: " + textenc.Escape(msg.Err.Error()) + "; retrying (the lease is kept while it answers extends)"
		return m, nil
	case Notice:
		m.note = textenc.Escape(strings.TrimSpace(msg.Text))
		return m, nil
	case NodeBack:
		m.node = ""
		m.note = "node is back"
		return m, nil
	case resultMsg:
		return m.result(msg)
	case skipDue:
		return m, m.giveBackSkipped(msg.e)
	case askMsg:
		return m, m.ask()
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

// extending reports whether an extend is on its way for any message.
func (m *Model) extending() bool {
	for _, e := range m.queue {
		if e.extending {
			return true
		}
	}
	return false
}

func (m *Model) busy() bool {
	for _, e := range m.queue {
		if e.busy != 0 {
			return true
		}
	}
	for _, e := range m.skip {
		if e.busy != 0 {
			return true
		}
	}
	return false
}

func (m Model) arrived(a Arrived) (tea.Model, tea.Cmd) {
	pos := [2]int64{int64(a.Msg.Partition), a.Msg.Offset}
	m.seen[pos]++
	m.tally.seen++
	e := &entry{h: a.Held, m: a.Msg, seen: m.seen[pos], since: m.o.Now()}
	var cmds []tea.Cmd
	if m.quit && e.h != nil {
		// Taken while the screen was closing: straight back.
		return m, m.settle(e, actGiveBack)
	}
	m.queue = append(m.queue, e)
	// A message skipped waits for this one to arrive before it goes back, so that the
	// node does not hand it straight back.
	for _, s := range m.skip {
		cmds = append(cmds, m.giveBackSkipped(s))
	}
	if len(m.queue) == 1 {
		cmds = append(cmds, m.show())
	}
	return m, tea.Batch(cmds...)
}

func (m *Model) giveBackSkipped(e *entry) tea.Cmd {
	if !e.skipping || e.busy != 0 {
		return nil
	}
	e.skipping = false
	return m.settle(e, actSkip)
}

func (m Model) stop() (tea.Model, tea.Cmd) {
	if !m.quit {
		m.quit, m.quitAt = true, m.o.Now()
	}
	var cmds []tea.Cmd
	for _, e := range append(append([]*entry(nil), m.queue...), m.skip...) {
		if e.h != nil && e.busy == 0 && !e.final {
			e.skipping = false
			cmds = append(cmds, m.settle(e, actGiveBack))
		}
	}
	if !m.busy() {
		return m, tea.Quit
	}
	if m.o.Quitting != nil {
		cmds = append(cmds, func() tea.Msg { m.o.Quitting(); return nil })
	}
	return m, tea.Batch(cmds...)
}

// settle starts a's request for e: e is busy until its result comes back, and no
// other key can send one for it meanwhile.
func (m *Model) settle(e *entry, a action) tea.Cmd {
	if a == actExtend {
		e.extending = true
	} else {
		e.busy = a
	}
	h := e.h
	run := func() tea.Msg {
		var err error
		switch a {
		case actAck:
			err = h.Ack()
		case actNack, actSkip, actGiveBack:
			err = h.Nack(consumer.GiveBack)
		case actExtend:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = h.Extend(ctx)
			if errors.Is(err, consumer.ErrLeaseGone) {
				_ = h.LeaseLost()
			}
		case actDeadLetter:
			err = h.DeadLettered(consumer.GiveBack)
		}
		return resultMsg{e: e, act: a, err: err}
	}
	if a == actProduce {
		produce, topic, msg, letter, seen := m.o.Produce, m.o.DeadLetter, e.m, m.o.Letter, e.seen
		run = func() tea.Msg {
			body, err := msg.PayloadBytes()
			if err != nil {
				body = msg.Payload // not decodable: what the node sent, as exec mode does
			}
			var replaced int
			if letter != nil {
				if body, replaced, err = letter(msg, body, seen); err != nil {
					return resultMsg{e: e, act: a, err: err}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			return resultMsg{e: e, act: a, err: produce(ctx, topic, body, msg.ForwardKey()), replaced: replaced}
		}
	}
	if m.spinning {
		return run
	}
	m.spinning = true
	return tea.Batch(run, m.o.After(spinEvery, func(time.Time) tea.Msg { return spinMsg{} }))
}

func (m Model) result(r resultMsg) (tea.Model, tea.Cmd) {
	e := r.e
	if r.act == actExtend {
		e.extending = false
		if e.final || e.busy != 0 {
			// Settled, or being settled, meanwhile: that answer says what became of it.
			return m, m.andQuit(nil)
		}
	} else {
		e.busy = 0
	}
	m.note = "" // what the client said while it was on its way is answered now
	var cmds []tea.Cmd
	switch r.act {
	case actExtend:
		switch {
		case r.err == nil:
			e.note, e.bad = "lease extended", false
		case errors.Is(r.err, consumer.ErrLeaseGone):
			cmds = append(cmds, m.lost(e, "lease lost: the node answered 410 to the extend, so it may be with another consumer now"))
		case errors.Is(r.err, consumer.ErrAlreadySettled):
			cmds = append(cmds, m.lost(e, "lease lost: it may be with another consumer now"))
		default:
			e.note, e.bad = "extend failed: "+textenc.Escape(r.err.Error())+" (the lease is still kept automatically)", true
		}
		return m, m.andQuit(cmds)
	case actProduce:
		if r.err != nil {
			e.note, e.bad = "dead-letter produce failed: "+textenc.Escape(r.err.Error())+" (nothing settled: it is still held)", true
			if m.quit && e.h != nil && !e.final {
				// Quitting waited for it (given up at the grace, say): what is held goes
				// back, as at the quitting key.
				return m, m.settle(e, actGiveBack)
			}
			return m, m.andQuit(nil)
		}
		e.replaced = r.replaced
		return m, m.settle(e, actDeadLetter)
	}
	// A settlement: whatever its answer, e is settled now and never again.
	e.final = true
	cmds = append(cmds, m.done())
	switch {
	case r.err == nil:
		switch r.act {
		case actAck:
			m.tally.acked++
		case actNack:
			m.tally.nacked++
		case actSkip:
			m.tally.skipped++
		case actGiveBack:
			m.tally.givenBack++
		case actDeadLetter:
			m.tally.deadLettered++
			if e.replaced > 0 {
				// Said as exec mode's line says it, short enough for 80 columns; the
				// next message may be on screen already.
				m.note = fmt.Sprintf("dead-lettered as the payload alone (its envelope, %s, is over 1 MiB)",
					render.ByteSize(int64(e.replaced)))
			}
		}
		cmds = append(cmds, m.drop(e))
	case errors.Is(r.err, consumer.ErrLeaseGone), errors.Is(r.err, consumer.ErrAlreadySettled):
		// A 410 on the ack, or the keeper found the lease gone first.
		m.tally.lost++
		if r.act == actDeadLetter {
			m.tally.deadLettered++ // the copy was produced
		}
		e.note, e.bad = "lease lost: the node answered 410, so the message may be delivered again (s for the next)", true
		if r.act != actAck && r.act != actDeadLetter {
			cmds = append(cmds, m.drop(e)) // it is back in the queue either way
		}
	default:
		m.tally.failed++
		e.note, e.bad = fmt.Sprintf("%s failed: %s (not confirmed: it may be delivered again; s for the next)", r.act.doing(), textenc.Escape(r.err.Error())), true
		if r.act != actAck && r.act != actDeadLetter {
			cmds = append(cmds, m.drop(e))
		}
	}
	return m, m.andQuit(cmds)
}

// andQuit adds the end of the program to cmds once quitting has nothing left on its way.
func (m *Model) andQuit(cmds []tea.Cmd) tea.Cmd {
	if m.quit && !m.busy() {
		cmds = append(cmds, tea.Quit)
	}
	return tea.Batch(cmds...)
}

// lost marks e's lease gone: settled, counted once.
func (m *Model) lost(e *entry, note string) tea.Cmd {
	if e.final {
		return nil
	}
	e.final = true
	e.note, e.bad = note+" (s for the next)", true
	m.tally.lost++
	return m.done()
}

// drop takes e off the screen (or the skipped list) and asks for the next message when
// the screen has nothing left.
func (m *Model) drop(e *entry) tea.Cmd {
	for i, s := range m.skip {
		if s == e {
			m.skip = append(m.skip[:i], m.skip[i+1:]...)
			return nil
		}
	}
	for i, q := range m.queue {
		if q == e {
			m.queue = append(m.queue[:i], m.queue[i+1:]...)
			break
		}
	}
	cmd := m.show()
	if len(m.queue) == 0 && !m.quit && !e.released {
		e.released = true
		return tea.Batch(cmd, m.ask())
	}
	return cmd
}

// checkLeases notices leases the keeper found gone.
func (m *Model) checkLeases() tea.Cmd {
	var cmds []tea.Cmd
	for _, e := range append(append([]*entry(nil), m.queue...), m.skip...) {
		if e.h == nil || e.final || e.busy != 0 {
			continue
		}
		if _, lost := e.h.Lease(); lost {
			cmds = append(cmds, m.lost(e, e.h.LostWhy()+": it may be with another consumer now"))
		}
	}
	return tea.Batch(cmds...)
}

func (m Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	m.note = ""
	e := m.head()
	switch {
	case key.Matches(k, m.keys.Quit):
		if m.quit {
			// A second q: leave now; the run gives back what is left and gives up the
			// settlements still retried, which the summary counts as not confirmed.
			for _, e := range append(append([]*entry(nil), m.queue...), m.skip...) {
				if e.busy != 0 && e.busy != actProduce {
					m.tally.failed++
				}
			}
			return m, tea.Quit
		}
		return m.stop()
	case key.Matches(k, m.keys.Help):
		m.help = !m.help
		return m, nil
	case m.quit:
		return m, nil
	case key.Matches(k, m.keys.Raw):
		m.raw = !m.raw
		return m, m.show()
	case key.Matches(k, m.keys.Copy):
		if e == nil {
			return m, nil
		}
		b, err := e.m.PayloadBytes()
		if err != nil {
			b = e.m.Payload
		}
		m.note = fmt.Sprintf("copied %s to the clipboard (OSC 52: the terminal has to allow it)", render.ByteSize(int64(len(b))))
		return m, tea.SetClipboard(string(b))
	case key.Matches(k, m.keys.Ack, m.keys.Nack, m.keys.Extend, m.keys.DeadLetter, m.keys.Skip):
		return m.decide(k, e)
	case key.Matches(k, m.keys.Down):
		m.pg.scroll(1)
	case key.Matches(k, m.keys.Up):
		m.pg.scroll(-1)
	case key.Matches(k, m.keys.PageDown):
		m.pg.scroll(m.pg.height)
	case key.Matches(k, m.keys.PageUp):
		m.pg.scroll(-m.pg.height)
	case key.Matches(k, m.keys.HalfDown):
		m.pg.scroll(m.pg.height / 2)
	case key.Matches(k, m.keys.HalfUp):
		m.pg.scroll(-m.pg.height / 2)
	case key.Matches(k, m.keys.Top):
		m.pg.top()
	case key.Matches(k, m.keys.Bottom):
		m.pg.bottom()
	}
	return m, nil
}

// decide handles the keys that act on the message on screen.
func (m Model) decide(k tea.KeyPressMsg, e *entry) (tea.Model, tea.Cmd) {
	skip := key.Matches(k, m.keys.Skip)
	switch {
	case e == nil:
		m.note = "no message on screen yet"
		return m, nil
	case m.o.Peek:
		if skip {
			e.final = true
			return m, m.drop(e)
		}
		m.note = "--peek takes nothing, so there is nothing to settle or extend (s for the next, q to quit)"
		return m, nil
	case e.busy != 0:
		m.note = "wait: " + e.busy.doing()
		return m, nil
	case e.extending && key.Matches(k, m.keys.Extend):
		m.note = "wait: " + actExtend.doing()
		return m, nil
	case e.final:
		if skip || key.Matches(k, m.keys.Nack) {
			return m, m.drop(e)
		}
		m.note = "it is settled already (s for the next)"
		return m, nil
	}
	e.note, e.bad = "", false
	switch {
	case key.Matches(k, m.keys.Ack):
		return m, m.settle(e, actAck)
	case key.Matches(k, m.keys.Nack):
		return m, m.settle(e, actNack)
	case key.Matches(k, m.keys.Extend):
		return m, m.settle(e, actExtend)
	case key.Matches(k, m.keys.DeadLetter):
		if m.o.DeadLetter == "" || m.o.Produce == nil {
			m.note = "no dead-letter topic: start with --dead-letter TOPIC"
			return m, nil
		}
		return m, m.settle(e, actProduce)
	}
	// Skip: the next one is asked for while this one is still held; it goes back once
	// the next arrives, or after skipWait.
	e.skipping, e.released = true, true
	m.queue = m.queue[1:]
	m.skip = append(m.skip, e)
	cmds := []tea.Cmd{m.show(), m.o.After(skipWait, func(time.Time) tea.Msg { return skipDue{e} })}
	if len(m.queue) == 0 {
		cmds = append(cmds, m.ask())
	}
	return m, tea.Batch(cmds...)
}

// layout sizes the payload's pager: the header and a rule above it, the note and the
// status line below.
func (m *Model) layout() tea.Cmd {
	m.pg.setHeight(m.h - 4)
	return m.show()
}

// show puts the head's payload in the pager, formatting it only when the message or
// the raw/pretty choice changed, and fitting it only when the width did too.
func (m *Model) show() tea.Cmd {
	e := m.head()
	raw := 0
	if m.raw {
		raw = 1
	}
	if e == m.shown && (e == nil || (e.fitWidth == m.w && e.fitRaw == raw)) {
		return nil
	}
	m.shown = e
	if e == nil {
		m.pg.set(nil, true)
		return nil
	}
	if e.f[raw] == nil {
		f := format(e.m, m.raw, m.c)
		e.f[raw] = &f
	}
	top := e.fitLines == nil
	if e.fitLines == nil || e.fitWidth != m.w || e.fitRaw != raw {
		e.fitLines, e.fitWidth, e.fitRaw = e.f[raw].fit(m.w), m.w, raw
	}
	m.pg.set(e.fitLines, top)
	return nil
}

// View draws the screen; it never formats a payload (show does, once).
func (m Model) View() tea.View {
	var b strings.Builder
	st := m.o.Styles
	e := m.head()
	width := max(m.w, 1)
	line := func(s string) {
		b.WriteString(ansi.Truncate(s, width, "…"))
		b.WriteByte('\n')
	}
	switch {
	case m.help:
		line(st.Header.Render("narad sub " + textenc.Escape(m.o.Topic) + " -i: keys"))
		line("")
		rows := 2
		for _, h := range m.keys.helpLines() {
			if rows >= m.h-2 {
				break
			}
			line(fmt.Sprintf("  %-13s %s", h[0], h[1]))
			rows++
		}
		if m.o.Peek {
			line("")
			line(st.Warn.Render("--peek: nothing is taken; a n e d are off, s shows the next"))
			rows += 2
		}
		for ; rows < m.h-2; rows++ {
			line("")
		}
	case e == nil:
		what := "waiting for a message on " + textenc.Escape(m.o.Topic) + "…"
		switch {
		case m.quit && m.o.Peek:
			what = "quitting…" // --peek holds nothing to give back
		case m.quit:
			what = "giving back what is held…"
		}
		line(st.Header.Render(what))
		for range max(m.h-3, 0) {
			line("")
		}
	default:
		line(m.header(e))
		line(st.Dim.Render(strings.Repeat("─", width)))
		b.WriteString(m.pg.view())
		b.WriteByte('\n')
	}
	line(m.noteLine(e))
	b.WriteString(ansi.Truncate(m.statusLine(e), width, "…"))
	v := tea.NewView(b.String())
	v.AltScreen = true
	return v
}

func (m Model) header(e *entry) string {
	st := m.o.Styles
	msg := e.m
	parts := []string{st.Header.Render(textenc.Escape(msg.Topic)),
		st.Tag.Render(fmt.Sprintf("p%d @%d", msg.Partition, msg.Offset))}
	// The key as a dead letter keeps it: decoded, or as the node sent it.
	if k := msg.ForwardKey(); k != nil {
		parts = append(parts, st.Key.Render("key="+textenc.Escape(*k)))
	}
	t := time.Unix(msg.Timestamp, 0)
	switch {
	case m.o.UTC:
		t = t.UTC()
	case m.o.Location != nil:
		t = t.In(m.o.Location)
	default:
		t = t.Local()
	}
	layout := "2006-01-02 15:04:05"
	if m.o.UTC {
		layout += " UTC"
	}
	parts = append(parts, st.Time.Render(t.Format(layout)), "seen "+strconv.Itoa(e.seen)+"×")
	f := e.f[0]
	if m.raw && e.f[1] != nil {
		f = e.f[1]
	}
	if f != nil {
		parts = append(parts, f.kind+" "+render.ByteSize(int64(f.size)))
	}
	return strings.Join(parts, "  ")
}

func (m Model) noteLine(e *entry) string {
	st := m.o.Styles
	switch {
	case m.quit && m.busy():
		// q was taken: say what it waits for, until when, and how to leave without
		// waiting for the answer.
		return st.Warn.Render(spinFrames[m.frame%len(spinFrames)] + " " + m.quittingText())
	case e != nil && e.busy != 0:
		return st.Warn.Render(spinFrames[m.frame%len(spinFrames)] + " " + e.busy.doing() + "… (retried in the background while the node answers 502/503)")
	case e != nil && e.extending:
		return st.Warn.Render(spinFrames[m.frame%len(spinFrames)] + " " + actExtend.doing() + "… (retried in the background; a n s d still work)")
	case m.node != "":
		return st.Failure.Render(m.node)
	case m.note != "":
		return m.note
	case e != nil && e.note != "":
		if e.bad {
			return st.Failure.Render(e.note)
		}
		return st.Success.Render(e.note)
	case m.o.Peek:
		return st.Dim.Render("--peek: browsing without taking (s next, r raw, y copy, ? help, q quit)")
	}
	return st.Dim.Render("a ack  n nack  s skip  d dead-letter  e extend  r raw  y copy  ? help  q quit")
}

// quittingText is the note while quitting waits for the node: what is on its way, when
// the run gives it up (--shutdown-grace from the quitting key), and that a second q or
// Ctrl-C gives it up now (the program ends; the run names each one to send again).
func (m Model) quittingText() string {
	s := "quitting: " + m.onTheirWay() + " retried"
	if g := m.o.ShutdownGrace; g > 0 {
		left := min(max(g-m.now.Sub(m.quitAt), 0), g)
		// In whole seconds, rounded up: "giving up in 0s" only once it is over.
		s += ", giving up in " + consumer.ShortDuration((left+time.Second-1)/time.Second*time.Second)
	}
	return s + " (q again to give up now; Ctrl-C too)"
}

// onTheirWay names the requests on their way, for the quitting line: "1 ack", "2
// give-backs", or "3 requests" when they are of different kinds.
func (m Model) onTheirWay() string {
	n, one, many := 0, "", ""
	for _, e := range append(append([]*entry(nil), m.queue...), m.skip...) {
		if e.busy == 0 {
			continue
		}
		k, ks := "ack", "acks"
		switch e.busy {
		case actNack, actSkip, actGiveBack:
			k, ks = "give-back", "give-backs"
		case actProduce:
			k, ks = "dead-letter copy", "dead-letter copies"
		}
		if n > 0 && k != one {
			k, ks = "request", "requests"
		}
		one, many = k, ks
		n++
	}
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (m Model) statusLine(e *entry) string {
	st := m.o.Styles
	var parts []string
	switch {
	case e == nil:
		parts = append(parts, "no message held")
	case m.o.Peek:
		parts = append(parts, "peek: nothing held")
	case e.final:
		parts = append(parts, "settled")
	default:
		parts = append(parts, m.leaseText(e))
	}
	if e != nil && !m.help && m.pg.long() {
		parts = append(parts, fmt.Sprintf("%d%%", m.pg.percent()))
	}
	parts = append(parts, m.Summary())
	s := " " + strings.Join(parts, " · ")
	if pad := max(m.w, 1) - ansi.StringWidth(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return st.Bar.Render(s)
}

// leaseText is the countdown: how long the lease has left, kept automatically.
func (m Model) leaseText(e *entry) string {
	renewed, lost := e.h.Lease()
	if lost {
		return "lease lost"
	}
	if m.o.Lease <= 0 {
		return "held " + m.now.Sub(e.since).Truncate(time.Second).String() + ", lease kept"
	}
	left := max(renewed.Add(m.o.Lease).Sub(m.now), 0)
	if left == 0 {
		// Extends are tried every tick, but none was confirmed for a whole lease.
		return "lease ran out: no extend confirmed, it may be delivered again"
	}
	if m.now.Sub(renewed) > 2*m.o.Lease/3 {
		// The keeper extends at a third of the lease and gives each extend a third to
		// answer: past two thirds with none confirmed, the extends are failing (a node
		// gone, 503s), and "kept" would be a promise the node is not keeping.
		return fmt.Sprintf("lease %s left, extends not confirmed (retried)", left.Round(time.Second/10).String())
	}
	return fmt.Sprintf("lease %s left, kept", left.Round(time.Second/10).String())
}
