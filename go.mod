module wanlab

go 1.26
