package cli

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/narad/narad/internal/devbroker"
)

// withKeyring swaps in the library's in-memory keyring for one test; after it, there
// is none again, as TestMain set it.
func withKeyring(t *testing.T) {
	keyring.MockInit()
	t.Cleanup(func() { keyring.MockInitWithError(errors.New("none in tests")) })
}

// A saved password goes to the system keyring where there is one: not into the config
// file; context show says where it is; requests use it; rm removes it.
func TestContextPasswordGoesToTheKeyring(t *testing.T) {
	withKeyring(t)
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0",
		Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3}},
		Users:  []devbroker.User{mustUser(t, "app:s3cretpw:consume:orders,produce:orders")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	e := newContextEnv(t)
	r := mustRun(t, e.run("context", "add", "prod", "--server", b.URL(), "--user", "app", "--password", "s3cretpw"), 0)
	if !strings.Contains(r.stderr, "its password is in the system keyring") {
		t.Errorf("add: stderr %q", r.stderr)
	}
	file, _ := os.ReadFile(e.path)
	if strings.Contains(string(file), "s3cretpw") || !strings.Contains(string(file), "password-store: keyring") {
		t.Errorf("config file:\n%s", file)
	}
	if pw, err := keyring.Get("narad:"+b.URL(), "app"); err != nil || pw != "s3cretpw" {
		t.Errorf("keyring holds %q, %v", pw, err)
	}
	r = mustRun(t, e.run("context", "show"), 0)
	if !strings.Contains(r.stdout, "password:  ******** (in the system keyring)\n") || strings.Contains(r.stdout, "s3cretpw") {
		t.Errorf("show:\n%s", r.stdout)
	}
	r = mustRun(t, e.run("context", "show", "-o", "json"), 0)
	if !strings.Contains(r.stdout, `"password_store":"keyring"`) || strings.Contains(r.stdout, "s3cretpw") {
		t.Errorf("show -o json: %s", r.stdout)
	}
	// The request carries the password from the keyring.
	mustRun(t, e.run("topic", "info", "orders"), 0)

	// Never sent to a host it was not saved for: a context edited to another server
	// finds no password there (the secret is filed under the server it was saved for).
	edited := strings.Replace(string(file), b.URL(), "http://127.0.0.1:1", 1)
	if err := os.WriteFile(e.path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	r = e.run("topic", "ls")
	if r.code == 0 || !strings.Contains(r.stderr, "not in the system keyring") {
		t.Errorf("edited server: exit %d, stderr %q", r.code, r.stderr)
	}
	if err := os.WriteFile(e.path, file, 0o600); err != nil {
		t.Fatal(err)
	}

	mustRun(t, e.run("context", "rm", "prod"), 0)
	if _, err := keyring.Get("narad:"+b.URL(), "app"); !errors.Is(err, keyring.ErrNotFound) {
		t.Errorf("after rm the keyring still has it: %v", err)
	}
}

// With --insecure-storage, or where no keyring answers (a headless server), the
// password goes to the 0600 config file, and narad says which and why.
func TestContextPasswordInTheFileWithoutAKeyring(t *testing.T) {
	withKeyring(t)
	e := newContextEnv(t)
	r := mustRun(t, e.run("context", "add", "a", "--server", "http://127.0.0.1:7942", "--user", "u", "--password", "pw1", "--insecure-storage"), 0)
	if !strings.Contains(r.stderr, "its password is in the config file, mode 0600 (--insecure-storage)") {
		t.Errorf("--insecure-storage: stderr %q", r.stderr)
	}
	if c := e.load().Contexts["a"]; c.Password != "pw1" || c.PasswordStore != "" {
		t.Errorf("saved %+v", c)
	}
	if _, err := keyring.Get("narad:http://127.0.0.1:7942", "u"); !errors.Is(err, keyring.ErrNotFound) {
		t.Errorf("--insecure-storage wrote to the keyring: %v", err)
	}

	keyring.MockInitWithError(errors.New("org.freedesktop.secrets was not provided"))
	r = mustRun(t, e.run("context", "add", "b", "--server", "http://127.0.0.1:7942", "--user", "u", "--password", "pw2"), 0)
	if !strings.Contains(strings.Join(strings.Fields(r.stderr), " "), "its password is in the config file, mode 0600 (no system keyring: org.freedesktop.secrets was not provided)") {
		t.Errorf("no keyring: stderr %q", r.stderr)
	}
	if c := e.load().Contexts["b"]; c.Password != "pw2" {
		t.Errorf("saved %+v", c)
	}
	r = mustRun(t, e.run("context", "show", "b"), 0)
	if !strings.Contains(r.stdout, "password:  ******** (in the config file)\n") || strings.Contains(r.stdout, "pw2") {
		t.Errorf("show:\n%s", r.stdout)
	}
}

func mustRun(t *testing.T, r cliResult, code int) cliResult {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d; stdout %q stderr %q", r.code, code, r.stdout, r.stderr)
	}
	return r
}
