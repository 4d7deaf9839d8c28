package bastion

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Target is where a client wants to go.
type Target struct {
	User string `json:"user"`
	Host string `json:"host"`
	Port int    `json:"port"`
}

func (t Target) String() string {
	return fmt.Sprintf("%s@%s:%d", t.User, t.Host, t.Port)
}

// Addr is host:port for dialing.
func (t Target) Addr() string { return net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) }

// ParseTarget checks the fields ssh substitutes for %r %h %p.
func ParseTarget(user, host, port string) (Target, error) {
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return Target{}, fmt.Errorf("invalid port %q", port)
	}
	if host == "" || strings.ContainsAny(host, " \t\r\n/") {
		return Target{}, fmt.Errorf("invalid host %q", host)
	}
	if user == "" || strings.ContainsAny(user, " \t\r\n") {
		return Target{}, fmt.Errorf("invalid user %q", user)
	}
	return Target{User: user, Host: host, Port: p}, nil
}
