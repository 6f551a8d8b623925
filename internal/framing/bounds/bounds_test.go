package bounds

import "testing"

// TestBoundsAgree: the relations the relay relies on between the bounds
// (liveness.go in internal/relay), so a change of one value cannot break
// another's reason in silence.
func TestBoundsAgree(t *testing.T) {
	for _, c := range []struct {
		ok   bool
		what string
	}{
		{LinkLost <= HungAgent, "a lost link holds text no longer than a hung agent"},
		{KeepalivePicture+Check < LinkAnswers, "a keepalive answered every KeepalivePicture is seen as recent (LinkAnswers)"},
		{LinkAnswers < HungAgent, "a link that answered before the agent fell silent is not taken for one that answers now"},
		{2*KeepalivePicture < LinkLost, "at least two keepalives go unanswered before a link is given up"},
		{IdleLinkLost >= LinkLost, "between pictures nobody waits: a kept connection is given up no sooner than during one"},
		{KeepaliveIdle < IdleLinkLost, "between pictures a keepalive is sent before the connection is given up"},
		{Ping*3 < AgentSilence, "an idle agent hears a ping several times before it gives the relay up"},
		{Check < Beat, "a picture's wait looks more often than the agent beats"},
		{EncoderStartMin <= EncoderStart, "the measured start's floor is under Strata's own bound"},
		{PrepareWake > EncoderStart, "prepare waits for the encoder's start longer than the agent allows it"},
	} {
		if !c.ok {
			t.Errorf("the bounds no longer say: %s", c.what)
		}
	}
}
