# see issue: rules for data are added here
