package subscriptions

import (
	"encoding/base64"
	"encoding/binary"
	"errors"

	"github.com/eventstore-service/eventstore/modules/names"
)

// Token names one delivery: the subscription and its incarnation, the
// partition, the epoch it was made in, the event and the attempt. A settle
// takes it only when every one of them is the delivery's in flight, so a
// token of a subscription deleted and created again under its name, or of
// another attempt, is stale. Its text is opaque to clients.
type Token struct {
	Subscription string
	// Incarnation tells the subscriptions of one name apart: the time of
	// its creation in Unix nanoseconds (Info.CreatedAt), which a creation
	// of the name after a delete never repeats.
	Incarnation uint64
	Partition   int
	Epoch       uint64
	EventID     uint64
	Attempt     int
}

// tokenVersion is the first byte of every token this package makes;
// tokenVersion1 that of the tokens before incarnations, parsed with
// incarnation 0, which no subscription has: they are stale.
const (
	tokenVersion  = 2
	tokenVersion1 = 1
)

// ErrInvalidToken reports a text that is no token of this package.
var ErrInvalidToken = errors.New("invalid delivery token")

// String returns the token's text: URL-safe base64 of its version, the
// incarnation, partition, epoch, event id and attempt as unsigned varints,
// and the subscription's name.
func (t Token) String() string { return string(t.Append(nil)) }

// Append appends the text of t (String) to dst: base64url characters
// only, which JSON takes between quotes as they are.
func (t Token) Append(dst []byte) []byte {
	var raw [1 + 5*binary.MaxVarintLen64 + 64]byte
	b := append(raw[:0], tokenVersion)
	b = binary.AppendUvarint(b, t.Incarnation)
	b = binary.AppendUvarint(b, uint64(t.Partition))
	b = binary.AppendUvarint(b, t.Epoch)
	b = binary.AppendUvarint(b, t.EventID)
	b = binary.AppendUvarint(b, uint64(t.Attempt))
	return base64.RawURLEncoding.AppendEncode(dst, append(b, t.Subscription...))
}

// ParseToken returns the token of text, or ErrInvalidToken.
func ParseToken(text string) (Token, error) {
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(b) == 0 || b[0] != tokenVersion && b[0] != tokenVersion1 {
		return Token{}, ErrInvalidToken
	}
	var incarnation uint64
	if b[0] == tokenVersion {
		v, n := binary.Uvarint(b[1:])
		if n <= 0 {
			return Token{}, ErrInvalidToken
		}
		incarnation, b = v, b[n:]
	}
	b = b[1:]
	var fields [4]uint64
	for i := range fields {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return Token{}, ErrInvalidToken
		}
		fields[i], b = v, b[n:]
	}
	t := Token{Incarnation: incarnation, Partition: int(fields[0]), Epoch: fields[1], EventID: fields[2], Attempt: int(fields[3]), Subscription: string(b)}
	if fields[0] >= MaxPartitions || fields[3] == 0 || fields[3] > MaxMaxDeliveries || !names.Valid(t.Subscription) {
		return Token{}, ErrInvalidToken
	}
	return t, nil
}
