package cli_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// fullpipe -pidfile F stdout|stderr PROGRAM [ARG...] runs PROGRAM with that stream a
// pipe that is full and that nobody reads while PROGRAM runs: a reader that stopped
// reading long ago. PROGRAM's pid goes to F (whole, by a rename); SIGINT and SIGTERM
// are passed on to it. Once PROGRAM exited, what it managed to write to the stream is
// copied to this process's, and its exit code is this one's. SIGQUIT starts the
// reading at once (so that a Go program's goroutine dump gets out) and is passed on.
func helperFullPipe() {
	args := os.Args[1:]
	if len(args) < 4 || args[0] != "-pidfile" || args[2] != "stdout" && args[2] != "stderr" {
		fmt.Fprintln(os.Stderr, "usage: fullpipe -pidfile F stdout|stderr PROGRAM [ARG...]")
		os.Exit(2)
	}
	pidfile, stream, args := args[1], args[2], args[3:]
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fullpipe:", err)
		os.Exit(1)
	}
	// Fill it: os.Pipe's ends are non-blocking under the runtime's poller, so a
	// write deadline ends the filling once the pipe takes no more.
	filled := 0
	chunk := make([]byte, 512)
	for i := range chunk {
		chunk[i] = '#'
	}
	_ = w.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	for {
		n, err := w.Write(chunk)
		filled += n
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				fmt.Fprintln(os.Stderr, "fullpipe: filling the pipe:", err)
				os.Exit(1)
			}
			break
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	copyTo := os.Stderr
	if stream == "stdout" {
		cmd.Stdout, copyTo = w, os.Stdout
	} else {
		cmd.Stderr = w
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "fullpipe:", err)
		os.Exit(1)
	}
	w.Close()
	tmp := pidfile + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err == nil {
		err = os.Rename(tmp, pidfile)
	}
	read := make(chan []byte, 1)
	readNow := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		select {
		case <-readNow:
		case <-exited:
		}
		data, _ := io.ReadAll(r)
		read <- data
	}()
	go func() {
		quit := false
		for s := range sigs {
			if s == syscall.SIGQUIT && !quit {
				quit = true
				close(readNow)
			}
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	close(exited)
	data := <-read
	if len(data) >= filled {
		data = data[filled:]
	}
	copyTo.Write(data)
	os.Exit(cmd.ProcessState.ExitCode())
}
