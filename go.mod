module github.com/echomq/emq

go 1.26.8
