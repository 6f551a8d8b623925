package strataconfig

import (
	"strings"
	"testing"
)

// H4: the api_key (and the env's tokens) showed in a dry run's diff, in
// its context lines and in changed lines alike.
func TestDiffHidesSecrets(t *testing.T) {
	old := "{\n  \"port\": 8080,\n  \"api_key\": \"sk-live-123\",\n  \"tokenizer\": \"tok.json\",\n  \"max_tokens\": 1024,\n" +
		"  \"env\": {\"HF_TOKEN\": \"hf_abc\", \"CUDA_VISIBLE_DEVICES\": \"0\"},\n  \"vision\": {\"gpu\": true}\n}\n"
	for _, c := range []struct{ name, new string }{
		{"context", strings.Replace(old, `"port": 8080`, `"port": 8081`, 1)},
		{"changed", strings.Replace(strings.Replace(old, "sk-live-123", "sk-live-456", 1), "hf_abc", "hf_def", 1)},
	} {
		d := (&Change{Path: "strata-x.json", Old: []byte(old), New: []byte(c.new)}).Diff()
		for _, secret := range []string{"sk-live", "hf_abc", "hf_def"} {
			if strings.Contains(d, secret) {
				t.Errorf("%s: the diff shows %s:\n%s", c.name, secret, d)
			}
		}
		if !strings.Contains(d, `"api_key": "<redacted>"`) {
			t.Errorf("%s: the diff does not say api_key is set:\n%s", c.name, d)
		}
		if c.name == "changed" && !strings.Contains(d, `"CUDA_VISIBLE_DEVICES": "0"`) || c.name == "context" && !strings.Contains(d, `"tokenizer": "tok.json"`) {
			t.Errorf("%s: more than secrets hidden:\n%s", c.name, d)
		}
	}
}
