# see issue: rules for report are added here
