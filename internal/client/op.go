package client

import "fmt"

// Op names one client operation, once: errors, events and the CLI's hints all take
// it from here. It is an integer so that no string can pass for one; a new Op is
// added before opCount and given a row in ops (TestEveryOpHasANameAndAGrant).
type Op uint8

// The operations. Names are what errors print before the status ("produce: 403 ...").
const (
	opNone Op = iota // the zero Op: an Error built without one prints no prefix

	OpConsume
	OpReplay
	OpAck
	OpExtend
	OpNack
	OpProduce
	OpProduceBatch
	OpReady

	OpListTopics
	OpTopicInfo
	OpCreateTopic
	OpEditTopic
	OpDeleteTopic
	OpTopicSchema

	OpListChildren
	OpAttachChild
	OpDetachChild

	OpListUsers
	OpShowUser
	OpAddUser
	OpSetGrants
	OpSetPassword
	OpDeleteUser

	OpClusterMembers
	OpClusterMoves
	OpDecommission
	OpCancelDecommission

	OpMetrics

	opCount
)

// Grant is what a user needs for an Op (Narad's access model: grants, topic
// ownership, admin). The zero Grant is no Grant, so an Op left out of ops shows.
type Grant uint8

const (
	grantUnset Grant = iota
	// GrantNone: nothing at all (health and readiness).
	GrantNone
	// GrantLogin: any valid credentials (listing topics, /metrics).
	GrantLogin
	// GrantConsume, GrantProduce and GrantCreate: that action on the topic's name.
	GrantConsume
	GrantProduce
	GrantCreate
	// GrantAnyOnTopic: any grant whose pattern matches the topic, or ownership (reads).
	GrantAnyOnTopic
	// GrantOwner: ownership of the topic (its creator), or admin.
	GrantOwner
	// GrantAdmin: the admin grant.
	GrantAdmin
)

func (g Grant) String() string {
	switch g {
	case GrantNone:
		return "none"
	case GrantLogin:
		return "login"
	case GrantConsume:
		return "consume"
	case GrantProduce:
		return "produce"
	case GrantCreate:
		return "create"
	case GrantAnyOnTopic:
		return "any grant on the topic"
	case GrantOwner:
		return "ownership"
	case GrantAdmin:
		return "admin"
	}
	return fmt.Sprintf("Grant(%d)", uint8(g))
}

type opInfo struct {
	name  string
	grant Grant
}

// ops is every Op's name and grant (API.md "Grants"; Narad's access model by route).
var ops = [opCount]opInfo{
	OpConsume:      {"consume", GrantConsume},
	OpReplay:       {"replay", GrantConsume},
	OpAck:          {"ack", GrantConsume},
	OpExtend:       {"extend", GrantConsume},
	OpNack:         {"nack", GrantConsume},
	OpProduce:      {"produce", GrantProduce},
	OpProduceBatch: {"produce", GrantProduce},
	OpReady:        {"ready", GrantNone},

	OpListTopics:  {"list topics", GrantLogin},
	OpTopicInfo:   {"topic", GrantAnyOnTopic},
	OpCreateTopic: {"create topic", GrantCreate},
	OpEditTopic:   {"edit topic", GrantOwner},
	OpDeleteTopic: {"delete topic", GrantOwner},
	OpTopicSchema: {"topic schema", GrantAnyOnTopic},

	OpListChildren: {"list children", GrantAnyOnTopic},
	OpAttachChild:  {"attach child", GrantOwner},
	OpDetachChild:  {"detach child", GrantOwner},

	OpListUsers:   {"list users", GrantAdmin},
	OpShowUser:    {"show user", GrantAdmin},
	OpAddUser:     {"add user", GrantAdmin},
	OpSetGrants:   {"set grants", GrantAdmin},
	OpSetPassword: {"set password", GrantAdmin},
	OpDeleteUser:  {"delete user", GrantAdmin},

	OpClusterMembers:     {"cluster members", GrantAdmin},
	OpClusterMoves:       {"cluster moves", GrantAdmin},
	OpDecommission:       {"decommission", GrantAdmin},
	OpCancelDecommission: {"cancel decommission", GrantAdmin},

	OpMetrics: {"metrics", GrantLogin},
}

// sentOnce are the operations sent once whatever the answer, never retried (see
// RetryPolicy): a change sent twice could fail on its own first success (a create's
// 409, a delete's 404), and readyz is a question about now.
var sentOnce = [opCount]bool{
	OpReady: true, OpCreateTopic: true, OpEditTopic: true, OpDeleteTopic: true, OpAttachChild: true,
	OpDetachChild: true, OpAddUser: true, OpSetGrants: true, OpSetPassword: true, OpDeleteUser: true,
	OpDecommission: true, OpCancelDecommission: true,
}

// secretBody are the operations whose request body carries a password: no hook is
// given it (see RequestEvent.Secret), as none is given the Authorization header.
var secretBody = [opCount]bool{OpAddUser: true, OpSetPassword: true}

// Retried reports whether o is retried on a 502, 503, 504 or 421 (and on a connection
// error) before its error comes back: every operation but the changes and readyz.
func (o Op) Retried() bool { return o < opCount && !sentOnce[o] }

// String is the Op's name as errors print it.
func (o Op) String() string {
	if o < opCount && ops[o].name != "" {
		return ops[o].name
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Grant is what a user needs for o.
func (o Op) Grant() Grant {
	if o < opCount {
		return ops[o].grant
	}
	return grantUnset
}
