package main

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

func TestZZProbe(t *testing.T) {
	m := newConsoleModel(nil, nil)
	m.Update(tea.WindowSizeMsg{Width: 40, Height: 80})
	c := floodCards(1)[0]
	c.Command = "rm -rf /srv/data/" + strings.Repeat("x", 60) + "/END"
	c.Key.Comment = strings.Repeat("k", 60)
	c.Covers = "this one use"
	m.Update(cardsMsg{c})
	for _, l := range strings.Split(m.View().Content, "\n") {
		fmt.Printf("%3d|%s|\n", ansi.StringWidth(l), ansi.Strip(l))
	}
}
