package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/narad/narad/internal/config"
	"github.com/narad/narad/internal/iostreams"
)

// contextEnv runs narad commands against one config file across calls.
type contextEnv struct {
	t    *testing.T
	path string
}

func newContextEnv(t *testing.T) *contextEnv {
	for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT", "NARAD_CONFIG"} {
		t.Setenv(k, "")
	}
	return &contextEnv{t: t, path: filepath.Join(t.TempDir(), "narad", "config.yaml")}
}

func (e *contextEnv) run(args ...string) cliResult {
	e.t.Helper()
	ios, _, out, errOut := iostreams.Test()
	env := map[string]string{"NARAD_CONFIG": e.path}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	code := Run(f, args)
	return cliResult{code, out.String(), errOut.String()}
}

func (e *contextEnv) load() *config.File {
	e.t.Helper()
	cfg, err := config.Load(e.path)
	if err != nil {
		e.t.Fatal(err)
	}
	return cfg
}

func TestContextLifecycle(t *testing.T) {
	e := newContextEnv(t)
	must := func(r cliResult, code int) cliResult {
		t.Helper()
		if r.code != code {
			t.Fatalf("exit %d, want %d; stdout %q stderr %q", r.code, code, r.stdout, r.stderr)
		}
		return r
	}

	must(e.run("context", "add", "prod", "--server", "https://narad.example.com", "--user", "app", "--password", "s3cret"), 0)
	cfg := e.load()
	if cfg.CurrentContext != "prod" {
		t.Errorf("current %q: the first context added should become current", cfg.CurrentContext)
	}
	want := config.Context{Server: "https://narad.example.com", User: "app", Password: "s3cret"}
	if cfg.Contexts["prod"] != want {
		t.Errorf("saved %+v, want %+v", cfg.Contexts["prod"], want)
	}
	fi, err := os.Stat(e.path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}

	must(e.run("context", "add", "local", "--server", "http://127.0.0.1:7942"), 0)
	if e.load().CurrentContext != "prod" {
		t.Error("a second context must not become current")
	}
	r := must(e.run("context", "add", "local", "--server", "http://127.0.0.1:1"), ExitFailed)
	if !strings.Contains(r.stderr, "--force") {
		t.Errorf("stderr %q, want a hint at --force", r.stderr)
	}
	must(e.run("context", "add", "local", "--server", "http://127.0.0.1:1", "--user", "dev", "--force"), 0)
	if got := e.load().Contexts["local"].Server; got != "http://127.0.0.1:1" {
		t.Errorf("server %q after --force", got)
	}

	r = must(e.run("context", "ls"), 0)
	wantLs := "CURRENT  NAME   SERVER                     USER\n" +
		"         local  http://127.0.0.1:1         dev\n" +
		"*        prod   https://narad.example.com  app\n"
	if r.stdout != wantLs {
		t.Errorf("ls:\n%q\nwant:\n%q", r.stdout, wantLs)
	}

	r = must(e.run("context", "show"), 0)
	wantShow := "name:      prod\nserver:    https://narad.example.com\nuser:      app\npassword:  ******** (in the config file)\ncurrent:   true\n"
	if r.stdout != wantShow {
		t.Errorf("show:\n%s\nwant:\n%s", r.stdout, wantShow)
	}
	for _, args := range [][]string{{"context", "show", "-o", "json"}, {"context", "ls", "-o", "json"}, {"context", "show", "prod"}} {
		if r := must(e.run(args...), 0); strings.Contains(r.stdout+r.stderr, "s3cret") {
			t.Errorf("%q shows the password: %q", args, r.stdout)
		}
	}

	must(e.run("context", "use", "local"), 0)
	if e.load().CurrentContext != "local" {
		t.Error("use did not switch")
	}
	must(e.run("context", "use", "nope"), ExitUsage)
	must(e.run("context", "rm", "prod"), 0)
	if cfg := e.load(); cfg.CurrentContext != "local" || len(cfg.Contexts) != 1 {
		t.Errorf("after rm of another: %+v", cfg)
	}
	must(e.run("context", "rm", "local"), 0)
	if cfg := e.load(); cfg.CurrentContext != "" || len(cfg.Contexts) != 0 {
		t.Errorf("rm of the current context should clear current-context: %+v", cfg)
	}
	must(e.run("context", "rm", "local"), ExitUsage)
	must(e.run("context", "show"), ExitUsage)
}

func TestContextAddValidation(t *testing.T) {
	e := newContextEnv(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644)
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"context", "add", "x"}, "needs --server"},
		{[]string{"context", "add", "x", "--server", "ftp://narad.example.com"}, "invalid server"},
		{[]string{"context", "add", "x", "--server", "narad.example.com:"}, "invalid server"},
		{[]string{"context", "add", "x", "--server", "http://u:p@host"}, "not the URL"},
		{[]string{"context", "add", "a b", "--server", "http://h"}, "invalid context name"},
		{[]string{"context", "add", "x", "--server", "http://h", "--password", "p"}, "--password needs --user"},
		{[]string{"context", "add", "x", "--server", "https://h", "--ca-cert", "/no/such.pem"}, "cannot read --ca-cert"},
		{[]string{"context", "add"}, "a context name"},
	} {
		r := e.run(tt.args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tt.err) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%q: exit %d stderr %q, want exit 2 with %q", tt.args, r.code, r.stderr, tt.err)
		}
	}
	if _, err := os.Stat(e.path); !os.IsNotExist(err) {
		t.Errorf("a refused add wrote the config file (%v)", err)
	}

	// TLS settings are saved, the CA as an absolute path.
	dir := filepath.Dir(ca)
	t.Chdir(dir)
	r := e.run("context", "add", "tls", "--server", "https://h", "--ca-cert", "ca.pem", "--insecure")
	if r.code != 0 || !strings.Contains(r.stderr, "does not verify TLS certificates") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	if c := e.load().Contexts["tls"]; c.CACert != ca || !c.Insecure {
		t.Errorf("saved %+v, want ca-cert %s and insecure", c, ca)
	}
}

// The environment is not read by add: NARAD_ADDR set by a shell profile must not end
// up saved as a context's server.
func TestContextAddIgnoresEnvironment(t *testing.T) {
	e := newContextEnv(t)
	t.Setenv("NARAD_ADDR", "http://from-env:1")
	t.Setenv("NARAD_USER", "envuser")
	if r := e.run("context", "add", "x", "--server", "http://h:1"); r.code != 0 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	if c := e.load().Contexts["x"]; c != (config.Context{Server: "http://h:1"}) {
		t.Errorf("saved %+v", c)
	}
}
