module github.com/echomq/emq

go 1.26.8

require (
	github.com/stretchr/testify v1.12.1
	github.com/valkey-io/valkey-go v1.0.79
)

require (
	github.com/robfig/cron/v3 v3.0.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
