package cli

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// confirm asks on the terminal before something destructive: the answer must be want
// ("y" also takes "yes", any case), else the command fails without doing it. Without a
// terminal on stdin it refuses outright: a script must say --yes.
func (e runEnv) confirm(what, prompt, want string) error {
	if !e.IO.IsStdinTTY() {
		return usageErrorf("refusing to %s without confirmation (stdin is not a terminal; pass --yes)", what)
	}
	if want == "y" {
		prompt += " [y/N]"
	}
	fmt.Fprint(e.IO.ErrOut, prompt+" ")
	line, interrupted, err := e.readAnswer()
	if interrupted {
		// The terminal stays as it was (cooked, echoing: nothing of ours to undo); the
		// line after the ^C keeps the shell's prompt off ours. Exit 130/143 (finish).
		fmt.Fprintln(e.IO.ErrOut)
		return exitWith(ExitFailed, fmt.Errorf("did not %s (interrupted)", what))
	}
	answer := strings.TrimSpace(line)
	ok := answer == want
	if want == "y" {
		ok = strings.EqualFold(answer, "y") || strings.EqualFold(answer, "yes")
	}
	if ok {
		return nil
	}
	if err != nil && err != io.EOF {
		return exitWith(ExitFailed, fmt.Errorf("cannot read the confirmation: %v", err))
	}
	if err == io.EOF && line == "" {
		fmt.Fprintln(e.IO.ErrOut)
	}
	if want == "y" {
		return exitWith(ExitFailed, fmt.Errorf("did not %s (not confirmed)", what))
	}
	return exitWith(ExitFailed, fmt.Errorf("did not %s (the name typed did not match)", what))
}

// readAnswer reads the answer to a prompt: a line of stdin, or nothing once a signal
// came first (interrupted). A terminal in cooked mode hands over nothing before Enter,
// so the read goes on in the background, left blocked for a process about to exit.
func (e runEnv) readAnswer() (line string, interrupted bool, err error) {
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(e.IO.In).ReadString('\n')
		got <- answer{line, err}
	}()
	select {
	case a := <-got:
		return a.line, false, a.err
	case <-e.Signals.Soft:
	case <-e.Signals.Hard.Done():
	}
	return "", true, nil
}
