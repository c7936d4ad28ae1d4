package subscriptions

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
)

// Token names one delivery: the subscription, the partition, the epoch it
// was made in, the event and the attempt. Its text is opaque to clients.
type Token struct {
	Subscription string
	Partition    int
	Epoch        uint64
	EventID      uint64
	Attempt      int
}

// tokenVersion is the first byte of every token this package makes.
const tokenVersion = 1

// ErrInvalidToken reports a text that is no token of this package.
var ErrInvalidToken = errors.New("invalid delivery token")

// String returns the token's text: URL-safe base64 of its version, the
// partition, epoch, event id and attempt as unsigned varints, and the
// subscription's name.
func (t Token) String() string {
	b := make([]byte, 0, 1+4*binary.MaxVarintLen64+len(t.Subscription))
	b = append(b, tokenVersion)
	b = binary.AppendUvarint(b, uint64(t.Partition))
	b = binary.AppendUvarint(b, t.Epoch)
	b = binary.AppendUvarint(b, t.EventID)
	b = binary.AppendUvarint(b, uint64(t.Attempt))
	return base64.RawURLEncoding.EncodeToString(append(b, t.Subscription...))
}

// ParseToken returns the token of text, or ErrInvalidToken.
func ParseToken(text string) (Token, error) {
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(b) == 0 || b[0] != tokenVersion {
		return Token{}, ErrInvalidToken
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
	t := Token{Partition: int(fields[0]), Epoch: fields[1], EventID: fields[2], Attempt: int(fields[3]), Subscription: string(b)}
	if fields[0] >= MaxPartitions || fields[3] == 0 || fields[3] > MaxMaxDeliveries || !ValidName(t.Subscription) {
		return Token{}, ErrInvalidToken
	}
	return t, nil
}
