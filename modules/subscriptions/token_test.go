package subscriptions

import "testing"

func TestTokenRoundTrip(t *testing.T) {
	for _, tok := range []Token{
		{Subscription: "billing", Partition: 0, Epoch: 0, EventID: 0, Attempt: 1},
		{Subscription: "a.b_c-D", Incarnation: 1795000000123456789, Partition: 1023, Epoch: 1 << 40, EventID: 1<<63 + 5, Attempt: 1000},
	} {
		got, err := ParseToken(tok.String())
		if err != nil || got != tok {
			t.Fatalf("round trip of %+v: %+v %v", tok, got, err)
		}
	}
}

func TestInvalidTokens(t *testing.T) {
	valid := Token{Subscription: "s", Attempt: 1}.String()
	for _, text := range []string{
		"", "!!!", valid[:len(valid)-1] + "*", "AA",
		Token{Subscription: "s", Attempt: 0}.String(),
		Token{Subscription: "", Attempt: 1}.String(),
		Token{Subscription: "s", Partition: 1024, Attempt: 1}.String(),
		Token{Subscription: "a b", Attempt: 1}.String(),
	} {
		if _, err := ParseToken(text); err != ErrInvalidToken {
			t.Errorf("ParseToken(%q): %v", text, err)
		}
	}
}

// TestTokensBeforeIncarnations: a token of the first version (no
// incarnation) parses with incarnation 0, which no subscription has.
func TestTokensBeforeIncarnations(t *testing.T) {
	got, err := ParseToken("AQAAAAFiaWxsaW5n") // version 1: partition 0, epoch 0, event 0, attempt 1, billing
	if err != nil || got != (Token{Subscription: "billing", Attempt: 1}) {
		t.Fatalf("a version-1 token: %+v %v", got, err)
	}
}
