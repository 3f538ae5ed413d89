package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestCleartextCredentials(t *testing.T) {
	tests := []struct {
		server string
		clear  bool
	}{
		{"http://127.0.0.1:7942", false},
		{"http://127.8.9.10", false},
		{"http://[::1]:7942", false},
		{"http://[::ffff:127.0.0.1]:7942", false},
		{"http://localhost:7942", false},
		{"http://LOCALHOST.:7942/", false},
		{"http://app.localhost", false},
		{"HTTP://127.0.0.1", false},
		{"https://narad.example.com", false},
		{"https://10.0.0.5:7942", false},
		{"http://narad.example.com", true},
		{"http://10.0.0.5:7942", true},
		{"http://0.0.0.0:7942", true},
		{"http://[fe80::1%25eth0]:7942", true},
		{"http://localhost.example.com", true},
		{"http://127.0.0.1.example.com", true},
		{"10.0.0.5:7942", true}, // no scheme is http://; url.Parse reads it oddly, still not trusted
		{"http://%zz", true},
	}
	for _, tt := range tests {
		if got := CleartextCredentials(tt.server); got != tt.clear {
			t.Errorf("CleartextCredentials(%q) = %v, want %v", tt.server, got, tt.clear)
		}
	}
}

func TestPermissionWarning(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes mean nothing on Windows")
	}
	withPassword := "contexts:\n  prod:\n    server: https://narad.example.com\n    user: app\n    password: s3cret\n"
	withoutPassword := "contexts:\n  local:\n    server: http://127.0.0.1:7942\n"
	tests := []struct {
		name string
		body string
		mode os.FileMode
		warn bool
	}{
		{"0600 with a password", withPassword, 0o600, false},
		{"0400 with a password", withPassword, 0o400, false},
		{"0644 with a password", withPassword, 0o644, true},
		{"0640 with a password", withPassword, 0o640, true},
		{"0620 with a password", withPassword, 0o620, true},
		{"0604 with a password", withPassword, 0o604, true},
		{"0644 without a password", withoutPassword, 0o644, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "my config.yaml")
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			f, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			got := f.PermissionWarning()
			if (got != "") != tt.warn {
				t.Fatalf("warning %q, want one: %v", got, tt.warn)
			}
			if tt.warn && !strings.Contains(got, "chmod 600 '"+path+"'") {
				t.Errorf("warning %q does not say how to fix it", got)
			}
		})
	}
	// A file that does not exist holds nothing; one saved by narad is 0600.
	f, err := Load(filepath.Join(t.TempDir(), "none.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if w := f.PermissionWarning(); w != "" {
		t.Errorf("missing file: %q", w)
	}
	f.Contexts["prod"] = Context{Server: "https://x", User: "u", Password: "p"}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	g, err := Load(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	if w := g.PermissionWarning(); w != "" {
		t.Errorf("file saved by narad: %q", w)
	}
}
