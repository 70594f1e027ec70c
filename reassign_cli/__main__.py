from reassign_cli.entry import run

if __name__ == "__main__":
    run()
