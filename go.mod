module github.com/echomq/emq

go 1.26.8

require (
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/valkey-io/valkey-go v1.0.79 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
