package sshx

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"reflect"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestHostKeyAlgorithms(t *testing.T) {
	rk, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	rpub, _ := ssh.NewPublicKey(&rk.PublicKey)
	epub, _, _ := ed25519.GenerateKey(rand.Reader)
	epk, _ := ssh.NewPublicKey(epub)
	// A pinned RSA key must be asked for with SHA-2 signatures: a current
	// OpenSSH refuses plain ssh-rsa (SHA-1), and the dial would fail.
	if got, want := HostKeyAlgorithms(rpub), []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}; !reflect.DeepEqual(got, want) {
		t.Errorf("rsa: %v", got)
	}
	if got := HostKeyAlgorithms(epk); !reflect.DeepEqual(got, []string{ssh.KeyAlgoED25519}) {
		t.Errorf("ed25519: %v", got)
	}
}
