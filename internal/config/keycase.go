package config

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// checkKeyCase refuses a key that names a setting in another spelling
// than postern.toml(5)'s. The decoder matches a key to a setting
// ignoring case (and by Unicode case folding: the Kelvin sign is a k), so
// "Approval" sets approval; a file that spells a setting both ways
// decodes to one value or the other at random, and the value judged when
// the file was read need not be the value in force after the next read
// of the same bytes. Every setting's name is in lower-case ASCII letters,
// digits and "_".
func checkKeyCase(md toml.MetaData) error {
	for _, k := range md.Keys() {
		for _, part := range k {
			if strings.Trim(part, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
				return fmt.Errorf("setting %s: write the names of settings as postern.toml(5) does, in lower case", quoted(k.String()))
			}
		}
	}
	return nil
}
