"""One module per screen: home, practice, challenges, challenge, calculator, stats, help, dialogs."""
