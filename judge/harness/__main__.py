from judge.harness.runner import main

main()
