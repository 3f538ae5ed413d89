package devbroker

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"sort"
	"time"
)

// The /v1/users routes, served only with security on (a real node without security
// has no such routes: its router answers 404). They share one store with the --user
// flags. Every route needs admin, except users changing their own password. Answers
// never carry a password; times are Unix milliseconds.

const maxPasswordBytes = 72 // bcrypt's limit on a real node

type grantJSON struct {
	Action   string   `json:"action"`
	Patterns []string `json:"patterns,omitempty"`
}

type userJSON struct {
	Username    string      `json:"username"`
	Grants      []grantJSON `json:"grants,omitempty"`
	Root        bool        `json:"root,omitempty"`
	CreatedAtMs int64       `json:"created_at_ms"`
	UpdatedAtMs int64       `json:"updated_at_ms"`
}

func (a *account) toJSON() userJSON {
	out := userJSON{Username: a.Name, Root: a.root, CreatedAtMs: a.created.UnixMilli(), UpdatedAtMs: a.updated.UnixMilli()}
	for _, g := range a.Grants {
		out.Grants = append(out.Grants, grantJSON{g.Action, g.Patterns})
	}
	return out
}

// parseGrants checks grants from a request body.
func parseGrants(in []grantJSON) ([]Grant, error) {
	out := make([]Grant, 0, len(in))
	for _, g := range in {
		switch {
		case g.Action == "admin":
			if len(g.Patterns) > 0 {
				return nil, fmt.Errorf("grant admin takes no patterns")
			}
		case g.Action != "produce" && g.Action != "consume" && g.Action != "create":
			return nil, fmt.Errorf("grant action %q must be produce, consume, create or admin", g.Action)
		case len(g.Patterns) == 0:
			return nil, fmt.Errorf("grant %s needs at least one pattern", g.Action)
		}
		for _, p := range g.Patterns {
			if !validPattern(p) {
				return nil, fmt.Errorf("grant pattern %q must be a topic name or a prefix ending in *", p)
			}
		}
		out = append(out, Grant{Action: g.Action, Patterns: g.Patterns})
	}
	return out, nil
}

func checkPassword(p string) error {
	if len(p) < 1 || len(p) > maxPasswordBytes {
		return fmt.Errorf("password must be 1 to %d bytes", maxPasswordBytes)
	}
	return nil
}

// admin answers the request (401, 403) and returns false unless the caller is an admin
// (anyone, with security off: then the caller is nil).
func (b *Broker) admin(w http.ResponseWriter, r *http.Request) (*account, bool) {
	u, _, ok := b.authenticate(w, r)
	return u, ok && b.permit(w, u, permAdmin, "")
}

// grantsAdminCheck refuses giving admin unless the caller is the root admin: granting
// what the caller does not hold (an admin holds every topic right, but only the root
// admin holds the right to make admins).
func grantsAdminCheck(caller *account, grants []Grant) error {
	if caller.root {
		return nil
	}
	for _, g := range grants {
		if g.Action == "admin" {
			return &statusError{http.StatusForbidden, fmt.Sprintf("user %q cannot grant admin: only the root admin can", caller.Name), nil}
		}
	}
	return nil
}

func userNotFound(name string) error {
	return &statusError{http.StatusNotFound, fmt.Sprintf("user %q not found", name), nil}
}

func forbiddenf(format string, args ...any) error {
	return &statusError{http.StatusForbidden, fmt.Sprintf(format, args...), nil}
}

// change replaces the account of name with what f makes of a copy of it, stamping the
// change. f refuses with an error.
func (a *authenticator) change(name string, now time.Time, f func(*account) error) (account, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old, ok := a.users[name]
	if !ok {
		return account{}, userNotFound(name)
	}
	next := *old
	if err := f(&next); err != nil {
		return account{}, err
	}
	next.updated = now
	a.users[name] = &next
	return next, nil
}

func (a *authenticator) get(name string) (account, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u, ok := a.users[name]
	if !ok {
		return account{}, false
	}
	return *u, true
}

func (b *Broker) handleCreateUser(w http.ResponseWriter, r *http.Request) {
	caller, ok := b.admin(w, r)
	if !ok {
		return
	}
	var req struct {
		Username string      `json:"username"`
		Password string      `json:"password"`
		Grants   []grantJSON `json:"grants"`
	}
	if !decodeBody(w, r, &req, http.StatusBadRequest) {
		return
	}
	if len(req.Username) > 64 || !nameChars().MatchString(req.Username) || req.Username == "." || req.Username == ".." {
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`username %q must be 1 to 64 characters from A-Z a-z 0-9 . _ - and not "." or ".."`, req.Username))
		return
	}
	if err := checkPassword(req.Password); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	grants, err := parseGrants(req.Grants)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := grantsAdminCheck(caller, grants); err != nil {
		writeErr(w, err)
		return
	}
	now := b.now()
	acct := &account{User: User{Name: req.Username, Password: req.Password, Grants: grants}, created: now, updated: now}
	a := b.auth
	a.mu.Lock()
	_, exists := a.users[req.Username]
	if !exists {
		a.users[req.Username] = acct
	}
	a.mu.Unlock()
	if exists {
		writeError(w, http.StatusConflict, fmt.Sprintf("user %q already exists", req.Username))
		return
	}
	writeJSON(w, http.StatusCreated, acct.toJSON())
}

func (b *Broker) handleListUsers(w http.ResponseWriter, r *http.Request) {
	if _, ok := b.admin(w, r); !ok {
		return
	}
	a := b.auth
	a.mu.Lock()
	out := make([]userJSON, 0, len(a.users))
	for _, u := range a.users {
		out = append(out, u.toJSON())
	}
	a.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Username < out[j].Username })
	writeJSON(w, http.StatusOK, out)
}

func (b *Broker) handleGetUser(w http.ResponseWriter, r *http.Request) {
	if _, ok := b.admin(w, r); !ok {
		return
	}
	u, ok := b.auth.get(r.PathValue("name"))
	if !ok {
		writeErr(w, userNotFound(r.PathValue("name")))
		return
	}
	writeJSON(w, http.StatusOK, u.toJSON())
}

func (b *Broker) handleSetGrants(w http.ResponseWriter, r *http.Request) {
	caller, ok := b.admin(w, r)
	if !ok {
		return
	}
	var req struct {
		Grants *[]grantJSON `json:"grants"`
	}
	if !decodeBody(w, r, &req, http.StatusBadRequest) {
		return
	}
	if req.Grants == nil {
		writeError(w, http.StatusBadRequest, "grants required (an empty list removes every grant)")
		return
	}
	grants, err := parseGrants(*req.Grants)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	name := r.PathValue("name")
	u, err := b.auth.change(name, b.now(), func(u *account) error {
		switch {
		case u.Name == caller.Name:
			return forbiddenf("user %q cannot change their own grants", caller.Name)
		case u.root:
			return forbiddenf("the grants of the root admin %q cannot change", u.Name)
		}
		if err := grantsAdminCheck(caller, grants); err != nil {
			return err
		}
		u.Grants = grants
		return nil
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, u.toJSON())
}

// handleSetPassword: an admin resets anyone's password but the root admin's, which
// only the root admin changes; a user who is not an admin changes their own by giving
// the current one.
func (b *Broker) handleSetPassword(w http.ResponseWriter, r *http.Request) {
	caller, _, ok := b.authenticate(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	isAdmin := caller.allowed(permAdmin, "")
	if !isAdmin && caller.Name != name {
		writeError(w, http.StatusForbidden, fmt.Sprintf("user %q lacks the admin grant: users change only their own password", caller.Name))
		return
	}
	var req struct {
		NewPassword     string  `json:"new_password"`
		CurrentPassword *string `json:"current_password"`
	}
	if !decodeBody(w, r, &req, http.StatusBadRequest) {
		return
	}
	if err := checkPassword(req.NewPassword); err != nil {
		writeError(w, http.StatusBadRequest, "new_password: "+err.Error())
		return
	}
	_, err := b.auth.change(name, b.now(), func(u *account) error {
		switch {
		case u.root && !caller.root:
			return forbiddenf("only the root admin can change the password of the root admin %q", u.Name)
		case u.Name == caller.Name && !isAdmin && req.CurrentPassword == nil:
			return forbiddenf("current_password required to change your own password")
		case u.Name == caller.Name && req.CurrentPassword != nil &&
			subtle.ConstantTimeCompare([]byte(*req.CurrentPassword), []byte(u.Password)) != 1:
			return forbiddenf("current_password is wrong")
		}
		u.Password = req.NewPassword
		return nil
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (b *Broker) handleDeleteUser(w http.ResponseWriter, r *http.Request) {
	caller, ok := b.admin(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	a := b.auth
	a.mu.Lock()
	u, ok := a.users[name]
	var err error
	switch {
	case !ok:
		err = userNotFound(name)
	case u.root:
		err = forbiddenf("the root admin %q cannot be deleted", name)
	case name == caller.Name:
		err = forbiddenf("user %q cannot delete themselves", name)
	default:
		delete(a.users, name)
	}
	a.mu.Unlock()
	if err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
