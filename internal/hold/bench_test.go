package hold

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/narad/narad/internal/render"
)

// bigJSON is a JSON document of about n bytes: an array of order objects, nested a
// level, with strings, numbers and literals, as a dump of a queue's content would be.
func bigJSON(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"orders":[`)
	for i := 0; b.Len() < n-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"order_id":"ord_%06d","amount":%d,"paid":%v,"note":null,"customer":{"id":"customer-%d","tags":["a","b"]},"text":"%s"}`,
			i, i*7, i%2 == 0, i%97, strings.Repeat("x", i%40))
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkFirstRender is what hold mode does between a 1 MiB JSON message arriving and
// its first screen: format it (indented, coloured), fit it to 80 columns, draw 80×24.
// The goal is 50 ms. Scrolling afterwards neither formats nor fits again
// (BenchmarkScroll).
func BenchmarkFirstRender(b *testing.B) {
	payload := bigJSON(1 << 20)
	st := render.NewStyles(&bytes.Buffer{}, true)
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		m := New(Options{Topic: "orders", Styles: st})
		mm, _ := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
		mm, _ = mm.Update(Arrived{Held: &fakeHeld{m: msgOf(string(payload), 1)}, Msg: msgOf(string(payload), 1)})
		if v := mm.View().Content; !strings.Contains(v, `"order_id"`) {
			b.Fatalf("screen:\n%s", v)
		}
	}
}

// BenchmarkScroll is one keystroke on that screen: a line down and a redraw.
func BenchmarkScroll(b *testing.B) {
	payload := bigJSON(1 << 20)
	m := New(Options{Topic: "orders", Styles: render.NewStyles(&bytes.Buffer{}, true)})
	mm, _ := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	mm, _ = mm.Update(Arrived{Held: &fakeHeld{m: msgOf(string(payload), 1)}, Msg: msgOf(string(payload), 1)})
	down := tea.KeyPressMsg{Code: tea.KeyDown}
	for b.Loop() {
		mm, _ = mm.Update(down)
		_ = mm.View()
	}
}

// BenchmarkPrettyJSON is the formatting step of BenchmarkFirstRender alone: indenting
// and colouring a 1 MiB document.
func BenchmarkPrettyJSON(b *testing.B) {
	payload := bigJSON(1 << 20)
	c := codesOf(render.NewStyles(&bytes.Buffer{}, true))
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, ok := prettyJSON(payload, c); !ok {
			b.Fatal("not JSON")
		}
	}
}
