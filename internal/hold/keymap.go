package hold

import "charm.land/bubbles/v2/key"

// keyMap is every key of hold mode, in one place: Update matches against it and the
// help screen is drawn from it.
type keyMap struct {
	Ack, Nack, Extend, DeadLetter, Skip, Raw, Copy, Help, Quit key.Binding
	// Scrolling the payload: the letters a pager uses, less d and u (decisions here).
	Up, Down, PageUp, PageDown, HalfUp, HalfDown, Top, Bottom key.Binding
}

func newKeyMap() keyMap {
	return keyMap{
		Ack:        key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "ack: done with it")),
		Nack:       key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "nack: give it back now, take the next")),
		Extend:     key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "extend the lease now")),
		DeadLetter: key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "dead-letter: produce to --dead-letter, then ack")),
		Skip:       key.NewBinding(key.WithKeys("s", "enter"), key.WithHelp("s, enter", "skip: take the next, then give this one back")),
		Raw:        key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "raw / pretty payload")),
		Copy:       key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "copy the payload to the clipboard (OSC 52)")),
		Help:       key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "this help")),
		Quit:       key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "give back what is held and quit")),

		Up:       key.NewBinding(key.WithKeys("up", "k")),
		Down:     key.NewBinding(key.WithKeys("down", "j")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "b")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "space", "f")),
		HalfUp:   key.NewBinding(key.WithKeys("ctrl+u")),
		HalfDown: key.NewBinding(key.WithKeys("ctrl+d")),
		Top:      key.NewBinding(key.WithKeys("home", "g")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G")),
	}
}

// helpLines is the help screen, one key a line.
func (k keyMap) helpLines() [][2]string {
	var out [][2]string
	for _, b := range []key.Binding{k.Ack, k.Nack, k.Skip, k.Extend, k.DeadLetter, k.Raw, k.Copy, k.Help, k.Quit} {
		out = append(out, [2]string{b.Help().Key, b.Help().Desc})
	}
	return append(out,
		[2]string{"↑↓ pgup pgdn", "scroll the payload (also k j, space b, ctrl+u ctrl+d, g G)"})
}
