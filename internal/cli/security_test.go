package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narad/narad/internal/iostreams"
)

// connectionWarnings resolves the connection for args (global flags only) with the
// config file body at mode, twice, and returns what was printed. Nothing is sent
// anywhere: only Factory.Connection runs.
func connectionWarnings(t *testing.T, body string, mode os.FileMode, env map[string]string, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if body != "" {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	ios, _, _, errOut := iostreams.Test()
	getenv := func(k string) string {
		if k == "NARAD_CONFIG" {
			return path
		}
		return env[k]
	}
	f := &Factory{IO: ios, Getenv: getenv, Now: time.Now, Signals: NewSignals()}
	root := NewRootCmd(f)
	if err := root.PersistentFlags().Parse(args); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := f.Connection(); err != nil {
			t.Fatalf("Connection: %v", err)
		}
	}
	return errOut.String()
}

func TestCleartextCredentialsWarning(t *testing.T) {
	const warn = "narad: warning: the password goes to http://narad.example.com:7942 over plain http, readable on the network (use https://)\n"
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"flags, remote http", nil, []string{"-s", "http://narad.example.com:7942", "-u", "app", "-p", "s3cret"}, warn},
		{"env, remote http", map[string]string{"NARAD_ADDR": "http://narad.example.com:7942", "NARAD_USER": "app", "NARAD_PASS": "x"}, nil, warn},
		{"user without password still sends Basic", nil, []string{"-s", "http://narad.example.com:7942", "-u", "app"}, warn},
		{"remote https", nil, []string{"-s", "https://narad.example.com", "-u", "app", "-p", "s3cret"}, ""},
		{"loopback http", nil, []string{"-s", "http://127.0.0.1:7942", "-u", "app", "-p", "s3cret"}, ""},
		{"localhost http", nil, []string{"-s", "localhost:7942", "-u", "app", "-p", "s3cret"}, ""},
		{"no credentials", nil, []string{"-s", "http://narad.example.com:7942"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := connectionWarnings(t, "", 0, tt.env, tt.args...); got != tt.want {
				t.Errorf("stderr %q, want %q (once)", got, tt.want)
			}
		})
	}
	// A saved context's credentials are warned about too.
	ctx := "current-context: lab\ncontexts:\n  lab:\n    server: http://10.1.2.3:7942\n    user: app\n    password: s3cret\n"
	got := connectionWarnings(t, ctx, 0o600, nil)
	if got != "narad: warning: the password goes to http://10.1.2.3:7942 over plain http, readable on the network (use https://)\n" {
		t.Errorf("context: stderr %q", got)
	}
}

func TestConfigPermissionWarning(t *testing.T) {
	ctx := "current-context: prod\ncontexts:\n  prod:\n    server: https://narad.example.com\n    user: app\n    password: s3cret\n"
	got := connectionWarnings(t, ctx, 0o644, nil)
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, "holds a password and other users can read or change it (mode 0644); fix it with: chmod 600 ") {
		t.Errorf("0644: stderr %q, want one warning with the fix", got)
	}
	if strings.Contains(got, "s3cret") {
		t.Errorf("the warning shows the password: %q", got)
	}
	if got := connectionWarnings(t, ctx, 0o600, nil); got != "" {
		t.Errorf("0600: stderr %q, want nothing", got)
	}
}
