package procid

import (
	"strconv"
	"syscall"
)

func (t *Table) sameUserNS(pid int) bool {
	var self, other syscall.Stat_t
	if syscall.Stat(t.Root+"/self/ns/user", &self) != nil {
		return false
	}
	if syscall.Stat(t.Root+"/"+strconv.Itoa(pid)+"/ns/user", &other) != nil {
		return false
	}
	return self.Dev == other.Dev && self.Ino == other.Ino
}
