package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/narad/narad/internal/chans"
)

// Where a context's password is kept (Context.PasswordStore).
const (
	// StoreFile is the config file itself (mode 0600): where no system keyring is
	// (a headless server), or asked for with context add --insecure-storage.
	StoreFile = ""
	// StoreKeyring is the system keyring (macOS Keychain, Windows Credential
	// Manager, the Secret Service on Linux desktops), as gh keeps its tokens.
	StoreKeyring = "keyring"
)

// keyringTimeout bounds a keyring call: a Secret Service that does not answer must
// not hang narad (the library has no timeout of its own).
const keyringTimeout = 3 * time.Second

// keyringService names a secret by the server it was saved for, so that it can only
// be found for that server: a config file edited to point a context elsewhere finds
// no password to send there.
func keyringService(server string) string { return "narad:" + NormalizeServer(server) }

// withTimeout runs fn, or gives up after keyringTimeout.
func withTimeout[T any](fn func() (T, error)) (T, error) {
	v, err := chans.Unless(time.After(keyringTimeout), fn)
	if errors.Is(err, chans.ErrGaveUp) {
		return v, fmt.Errorf("no answer within %s", keyringTimeout)
	}
	return v, err
}

// SetPassword saves c's password: in the system keyring unless insecure or none is
// available, else in c itself (the config file). It returns where it went and, when
// the keyring was wanted but refused, why.
func SetPassword(c *Context, password string, insecure bool) (store string, keyringErr error) {
	c.Password, c.PasswordStore = "", StoreFile
	if password == "" {
		return StoreFile, nil
	}
	if !insecure {
		_, err := withTimeout(func() (struct{}, error) {
			return struct{}{}, keyring.Set(keyringService(c.Server), c.User, password)
		})
		if err == nil {
			c.PasswordStore = StoreKeyring
			return StoreKeyring, nil
		}
		keyringErr = err
	}
	c.Password = password
	return StoreFile, keyringErr
}

// savedPassword is c's password wherever it is kept.
func savedPassword(c Context) (string, error) {
	if c.PasswordStore != StoreKeyring {
		return c.Password, nil
	}
	pw, err := withTimeout(func() (string, error) { return keyring.Get(keyringService(c.Server), c.User) })
	if errors.Is(err, keyring.ErrNotFound) {
		return "", fmt.Errorf("its password is not in the system keyring any more (save it again with narad context add --force)")
	}
	if err != nil {
		// One line with what to do: no keyring answers on a headless machine or over ssh.
		return "", fmt.Errorf("cannot read its password from the system keyring: %v (give it with NARAD_PASS or "+
			"--password-stdin, or save the context again with context add --force --insecure-storage, which keeps it in the config file)", err)
	}
	return pw, nil
}

// ForgetPassword removes the keyring secret of a context that is going away or being
// replaced, unless another context of f keeps the same one (same server and user).
func (f *File) ForgetPassword(name string) {
	c, ok := f.Contexts[name]
	if !ok || c.PasswordStore != StoreKeyring {
		return
	}
	for other, o := range f.Contexts {
		if other != name && o.PasswordStore == StoreKeyring && o.User == c.User &&
			NormalizeServer(o.Server) == NormalizeServer(c.Server) {
			return
		}
	}
	_, _ = withTimeout(func() (struct{}, error) {
		return struct{}{}, keyring.Delete(keyringService(c.Server), c.User)
	})
}

// HasPassword reports whether c has a saved password, and where.
func (c Context) HasPassword() (store string, ok bool) {
	switch {
	case c.PasswordStore == StoreKeyring:
		return StoreKeyring, true
	case c.Password != "":
		return StoreFile, true
	}
	return "", false
}
