package gateway

import (
	"encoding/json"

	"github.com/postern/postern/approvals"
)

// maxPartBytes bounds the cards one line of a follower's stream carries
// (one card aside, which a part always holds), well within a line a
// console reads (control.MaxResponse, 64 MiB): the pending cards
// together are as large as the requesters make them (a key's comment of
// 160 KiB on each of hundreds of cards), and a console sent them in one
// line too long to read could read none of them again.
const maxPartBytes = 8 << 20

// cardParts cuts change d into parts of at most maxPartBytes of cards,
// each but the last marked More (approvals.CardsDelta): the first is d's
// step, its gone cards and its first cards; each other part follows
// d.Seq and is at d.Seq.
func cardParts(d *approvals.CardsDelta) []*approvals.CardsDelta {
	if len(d.Cards) <= 1 {
		return []*approvals.CardsDelta{d}
	}
	var parts []*approvals.CardsDelta
	part := &approvals.CardsDelta{Seq: d.Seq, Since: d.Since, Reset: d.Reset, Gone: d.Gone}
	size := 0
	for i := range d.Cards {
		b, _ := json.Marshal(&d.Cards[i])
		if len(part.Cards) > 0 && size+len(b) > maxPartBytes {
			part.More = true
			parts = append(parts, part)
			part, size = &approvals.CardsDelta{Seq: d.Seq, Since: d.Seq}, 0
		}
		part.Cards = append(part.Cards, d.Cards[i])
		size += len(b)
	}
	return append(parts, part)
}
