from neuronemu.cli import main

main()
