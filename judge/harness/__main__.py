import sys

if sys.argv[1:] == ["zygote"]:
    from judge.harness.zygote import main
else:
    from judge.harness.runner import main

main()
