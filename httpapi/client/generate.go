package client

//go:generate go run ./internal/gen -o client.gen.go
