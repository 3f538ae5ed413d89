package config

import (
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strings"
)

// CleartextCredentials reports whether Basic credentials sent to server would cross a
// network in the clear: a plain http:// URL whose host is not the loopback interface.
// It decides from the URL alone, never by resolving a name: "localhost" (and names
// under .localhost, RFC 6761) and loopback addresses are local, any other name may be
// anywhere. A URL that does not parse is not trusted.
func CleartextCredentials(server string) bool {
	u, err := url.Parse(strings.TrimSpace(server))
	if err != nil {
		return true
	}
	if !strings.EqualFold(u.Scheme, "http") {
		return u.Scheme == "" // no scheme means http://; https is encrypted
	}
	return !isLoopbackHost(u.Hostname())
}

func isLoopbackHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// PermissionWarning is the advice to print when the file holds a password and other
// users may read or change it, "" otherwise (or where file modes mean nothing). A
// file narad wrote is 0600; one copied or written by hand may not be.
func (f *File) PermissionWarning() string {
	if f.mode == 0 || runtime.GOOS == "windows" || f.mode.Perm()&0o077 == 0 {
		return ""
	}
	holdsPassword := false
	for _, c := range f.Contexts {
		if c.Password != "" {
			holdsPassword = true
			break
		}
	}
	if !holdsPassword {
		return ""
	}
	return fmt.Sprintf("config %s holds a password and other users can read or change it (mode %04o); fix it with: chmod 600 %s",
		f.path, f.mode.Perm(), shellQuote(f.path))
}

// shellQuote makes path safe to paste into a shell when it needs to be.
func shellQuote(path string) string {
	if path != "" && strings.Trim(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+~") == "" {
		return path
	}
	return "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
}
