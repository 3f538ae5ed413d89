//go:build linux

package cli_test

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/narad/narad/internal/devbroker"
)

// waitEchoOff waits until the terminal no longer echoes what is typed: a password
// typed before that would be shown. The bound only turns a wait that never ends into
// a failure.
func (r *ptyRun) waitEchoOff() {
	r.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		tio, err := unix.IoctlGetTermios(int(r.tty.Fd()), unix.TCGETS)
		if err != nil {
			r.t.Fatal(err)
		}
		if tio.Lflag&unix.ECHO == 0 {
			return
		}
		if time.Now().After(deadline) {
			_ = r.cmd.Process.Kill()
			r.t.Fatalf("the terminal still echoes what is typed; it showed %q", r.screen.String())
		}
	}
}

// user add and user passwd with --password-stdin, run at a terminal, ask for the
// password without echo (and twice), as the global --password-stdin does there: read
// as a line of stdin, it was shown on the screen as it was typed.
func TestUserPasswordStdinAtATerminalIsNotEchoed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildNarad(t)
	b, err := devbroker.Start(devbroker.Config{Users: []devbroker.User{
		{Name: "admin", Password: "s3cret", Grants: []devbroker.Grant{{Action: "admin"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=dumb", "NO_COLOR=1",
		"NARAD_ADDR=" + b.URL(), "NARAD_USER=admin", "NARAD_PASS=s3cret"}
	for _, tc := range []struct {
		args    []string
		prompts []string
		user    string
	}{
		{[]string{"user", "add", "ci", "--grant", "produce:t", "--password-stdin"},
			[]string{"password for the new user ci: ", "retype the password for ci: "}, "ci"},
		{[]string{"user", "passwd", "ci", "--password-stdin"},
			[]string{"new password for ci: ", "retype the new password for ci: "}, "ci"},
	} {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			secret := "pw-of-" + tc.args[1] + "-9"
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = env
			r := startInPTY(t, cmd, nil)
			for _, p := range tc.prompts {
				r.waitFor("prompt "+p, contains(p))
				r.waitEchoOff()
				r.typeKeys([]byte(secret + "\r"))
			}
			if err := r.end("the passwords"); err != nil {
				t.Fatalf("%v; the terminal showed %q", err, r.screen.String())
			}
			if strings.Contains(r.screen.String(), secret) {
				t.Errorf("the password was shown: %q", r.screen.String())
			}
			req, _ := http.NewRequest("GET", b.URL()+"/v1/topics", nil)
			req.SetBasicAuth(tc.user, secret)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode == http.StatusUnauthorized {
				t.Errorf("%s cannot sign in with the password typed", tc.user)
			}
			r.modesKept()
		})
	}
}
