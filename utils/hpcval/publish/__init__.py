"""Publishing: run reports read, compared, tabled, plotted and calibrated."""
