// Package config owns the config file (saved contexts) and the layering of the
// connection settings: flag > env > context > default, field by field. It is also
// where the rule "a context's credentials go only to its own server" is enforced.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/narad/narad/internal/textenc"
)

// DefaultServer is the node used when nothing else names one.
const DefaultServer = "http://127.0.0.1:" + DefaultPort

// Context is one saved connection.
type Context struct {
	Server   string `yaml:"server"`
	User     string `yaml:"user,omitempty"`
	Password string `yaml:"password,omitempty"`
	// PasswordStore is where the password is kept: StoreFile (Password above, or
	// none) or StoreKeyring (the system keyring, under the server and user).
	PasswordStore string `yaml:"password-store,omitempty"`
	CACert        string `yaml:"ca-cert,omitempty"`
	Insecure      bool   `yaml:"insecure,omitempty"`
}

// File is the config file. It is read and written with a YAML codec rather than
// through viper because viper folds keys to lower case, which would rename contexts.
type File struct {
	CurrentContext string             `yaml:"current-context,omitempty"`
	Contexts       map[string]Context `yaml:"contexts,omitempty"`

	path string
	mode os.FileMode // as read, for PermissionWarning; 0 when there was no file
	// exists is whether there was a file to read: a missing one loads as empty.
	exists bool
	// unknown are the fields of the file narad does not know, as "line N: NAME", for
	// UnknownFieldsWarning.
	unknown []string
}

// DefaultPath is $XDG_CONFIG_HOME/narad/config.yaml, else ~/.config/narad/config.yaml.
func DefaultPath(getenv func(string) string) (string, error) {
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "narad", "config.yaml"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("cannot find the config directory (set XDG_CONFIG_HOME or --config)")
		}
	}
	return filepath.Join(home, ".config", "narad", "config.yaml"), nil
}

// maxFileSize bounds the config file: a few contexts are a few hundred bytes, and
// without a bound a path such as /dev/zero would be read until memory runs out.
const maxFileSize = 1 << 20

// Load reads the config file at path; a missing file is an empty config. Only a
// regular file of at most 1 MiB is read: a FIFO would block the read until some
// writer came (deaf to Ctrl-C, which narad turns into a stop it checks between
// steps), and a device such as /dev/zero never ends.
func Load(path string) (*File, error) {
	f := &File{path: path, Contexts: map[string]Context{}}
	data, mode, err := readRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		// The path is already on the line; the *PathError would repeat it.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		var ne *notRegularError
		if errors.As(err, &ne) || errors.Is(err, errTooLarge) {
			return nil, fmt.Errorf("config %s %w (name a regular file with --config)", path, err)
		}
		return nil, fmt.Errorf("cannot read config %s: %w (fix it, or name another file with --config)", path, err)
	}
	f.mode, f.exists = mode, true
	if err := yaml.Unmarshal(data, f); err != nil {
		// A type error spans lines ("unmarshal errors:\n  line 1: ..."): folded, so
		// the reason stays on the one line an error gets.
		return nil, fmt.Errorf("config %s is not valid YAML: %s (fix it, or name another file with --config)",
			path, strings.Join(strings.Fields(err.Error()), " "))
	}
	if f.Contexts == nil {
		f.Contexts = map[string]Context{}
	}
	f.unknown = unknownFields(data)
	return f, nil
}

// unknownFieldRE is how the YAML codec names a field no struct field takes; compiled
// on first use, as every command links this package.
var unknownFieldRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`line (\d+): field (\S+) not found in type`)
})

// unknownFields are the fields in data, a file already read, that narad does not
// know ("line 5: passwrd"). They are left out of a lenient read, which a newer narad's
// file needs; a hand-edited typo would otherwise be dropped without a word, its context
// signing in without the password or trusting no CA.
func unknownFields(data []byte) []string {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var strict File
	err := dec.Decode(&strict)
	if err == nil {
		return nil
	}
	var out []string
	for _, m := range unknownFieldRE().FindAllStringSubmatch(err.Error(), -1) {
		out = append(out, "line "+m[1]+": "+m[2])
	}
	return out
}

// UnknownFieldsWarning is the advice to print when the file has fields narad does not
// know (a typo, or a newer narad's), "" otherwise.
func (f *File) UnknownFieldsWarning() string {
	if len(f.unknown) == 0 {
		return ""
	}
	what := "a field"
	if len(f.unknown) > 1 {
		what = "fields"
	}
	return fmt.Sprintf("config %s has %s narad does not know, ignored: %s (a typo? it reads current-context and "+
		"contexts, each with server, user, password, password-store, ca-cert, insecure)", f.path, what, strings.Join(f.unknown, ", "))
}

// Path is where the file was read from and will be saved to.
func (f *File) Path() string { return f.path }

// Exists reports whether Load found a file at Path (a missing one loads as empty).
func (f *File) Exists() bool { return f.exists }

// Save writes the file atomically with mode 0600, since it may hold passwords. A
// config that is a symlink (kept with the dotfiles) is written through to the file
// it names, the link left as it is: a rename over the link would replace it with a
// file of its own and leave the dotfiles' copy behind.
func (f *File) Save() error {
	data, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	path, err := linkTarget(f.path)
	if err != nil {
		return fmt.Errorf("cannot write config: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("cannot write config: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot write config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// The temporary file is in the target's own directory, so the rename is atomic.
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot write config: %w", err)
	}
	return nil
}

// maxLinks bounds the symlinks followed from the config path, as the kernel's own
// limit does for a loop.
const maxLinks = 40

// linkTarget is the file path names once its symlinks are followed, a link that
// names nothing yet included (the dotfiles' copy not written so far): path itself
// when it is no symlink or does not exist.
func linkTarget(path string) (string, error) {
	for range maxLinks {
		fi, err := os.Lstat(path)
		if errors.Is(err, os.ErrNotExist) || err == nil && fi.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// Names lists the saved contexts in order.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Contexts))
	for n := range f.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ValidateContextName accepts what its message says: letters, digits, '.', '_' and
// '-'. Anything else would be awkward in a shell or YAML, or would drive a terminal.
func ValidateContextName(name string) error {
	ok := name != ""
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '.' && r != '_' && r != '-' {
			ok = false
			break
		}
	}
	if !ok {
		return fmt.Errorf("invalid context name %q (letters, digits, '.', '_' and '-')", name)
	}
	return nil
}

// DefaultPort is the port a node listens on (and narad dev): the port of an address
// typed as a bare host.
const DefaultPort = "7942"

// NormalizeServer is s with http:// in front when it names no scheme: `-s host:port`
// means http://host:port (CLI.md), which url.Parse would read as scheme "host". A bare
// host (no scheme, no port, no path) also gets the node's port, as `nats -s host` and
// `kcat -b host` do: `-s 10.0.0.5` is http://10.0.0.5:7942, not port 80, where no
// node listens. With a scheme the URL is taken as written (http://host is port 80).
func NormalizeServer(s string) string {
	if s == "" || strings.Contains(s, "://") {
		return s
	}
	if bareHost(s) {
		return "http://" + net.JoinHostPort(strings.Trim(s, "[]"), DefaultPort)
	}
	return "http://" + s
}

// bareHost says s is a host name or address alone: no port, path, query or userinfo.
func bareHost(s string) bool {
	if strings.ContainsAny(s, "/?#@ ") {
		return false
	}
	if strings.HasPrefix(s, "[") { // [::1], or [::1]:7942
		return strings.HasSuffix(s, "]")
	}
	return !strings.Contains(s, ":")
}

// ValidateUser checks a Basic auth user name. The user ends at the first colon
// (RFC 7617), so "ops:team" would sign in as ops, with "team:" and the password taken
// for ops's password, a failed login against a user never named; a control character
// is no name anyone meant to type.
func ValidateUser(u string) error {
	if strings.ContainsRune(u, ':') {
		return fmt.Errorf("invalid user %q (a Basic auth user name ends at the first ':', so the node would read user %q)",
			u, u[:strings.IndexByte(u, ':')])
	}
	if strings.ContainsFunc(u, unicode.IsControl) {
		return fmt.Errorf("invalid user %q (a user name holds no control characters)", u)
	}
	return nil
}

// ValidateServer checks that s is an http(s) URL with a host.
func ValidateServer(s string) error {
	if textenc.NeedsEscape(s) {
		// A C1 control, a bidi or zero-width character: never part of an address
		// anyone typed (url.Parse refuses only the ASCII controls), and offered by
		// completion it would reach the terminal raw.
		return fmt.Errorf("invalid server %q (it holds a control or invisible character)", RedactURL(s))
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("invalid server %q (want http://HOST:PORT or https://HOST)", RedactURL(s))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("invalid server %q (a port is 1 to 65535)", RedactURL(s))
		}
	}
	// An '@' past the host is the same mistake a colon or slash short ("http//u:pw@h"
	// is host "http", path "//u:pw@h"), which would send the password in every
	// request's path.
	if u.User != nil || strings.Contains(s, "@") {
		return fmt.Errorf("invalid server %q (put credentials in --user and --password, not the URL)", RedactURL(s))
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		// The client refuses them (a request's own query goes after the path): a
		// context saved with one would fail every command after it.
		return fmt.Errorf("invalid server %q (no query or fragment allowed: want http://HOST:PORT[/PATH])", RedactURL(s))
	}
	return nil
}

// RedactURL is a server address as it may be shown: everything between its scheme
// (with the slashes after it) and its last '@' written as "xxxxx", since that is where
// a user and password were typed: "http://u:PW@h:1" reads "http://xxxxx@h:1". It
// works on the text, not on what url.Parse makes of it: an address that does not
// parse may still hold a password, and one a slash short ("http:/u:PW@h", which -s
// normalizes to "http://http:/u:PW@h") or without a scheme ("u:PW@h:1") parses, when
// it does, with the password in its path or its scheme, where no parser's redaction
// looks. Every scheme-like start is kept ("http://http:/"), so the line still shows
// the typo. An address without '@' is returned as it is.
func RedactURL(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return s
	}
	start := 0
	for n := schemePrefix(s[:at]); n > 0; n = schemePrefix(s[start:at]) {
		start += n
	}
	return s[:start] + "xxxxx" + s[at:]
}

// schemePrefix is the length of a scheme with its ':' and the '/'s after it (at
// least one) at the start of s ("http://", "https:/"); 0 when s starts with none.
func schemePrefix(s string) int {
	i := 0
	for i < len(s) && (isASCIILetter(s[i]) || i > 0 && (s[i] >= '0' && s[i] <= '9' || strings.IndexByte("+.-", s[i]) >= 0)) {
		i++
	}
	if i == 0 || i+1 >= len(s) || s[i] != ':' || s[i+1] != '/' {
		return 0
	}
	i++
	for i < len(s) && s[i] == '/' {
		i++
	}
	return i
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// SameOrigin reports whether two server URLs name the same scheme, host and port,
// so that saved credentials are sent to the server they were saved for and no other.
func SameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) &&
		strings.EqualFold(ua.Hostname(), ub.Hostname()) &&
		portOf(ua) == portOf(ub)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}
