# see issue: rules for select are added here
